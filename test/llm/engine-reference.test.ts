import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  LlamaChat,
  LlamaLogLevel,
  getLlama,
  resolveChatWrapper,
  type ChatHistoryItem,
  type Llama,
  type LlamaContext,
  type LlamaGrammar,
  type LlamaModel,
} from 'node-llama-cpp';
import type { LlmEngine } from '../../services/llm/src/adapters/engine.js';
import { loadLlamaEngine } from '../../services/llm/src/adapters/llama-engine.js';
import type { GenerationParams } from '../../services/llm/src/domain/types.js';
import { describeReal, missingModel, realModelPath } from '../fixtures/real-component.js';
import { tinyModelPath } from './helpers.js';

// The service's engine steps its generations itself (one lockstep loop for all of them, its own
// stop handling and detokenizing). Under greedy decoding it must give exactly the text that
// node-llama-cpp's own LlamaChat gives for the same chat, alone or three at once.

const REAL = realModelPath('llm', 'gemma-3-270m-q4_k_m.gguf');

interface Reference {
  readonly llama: Llama;
  readonly model: LlamaModel;
  readonly context: LlamaContext;
  reply(
    prompt: string,
    maxTokens: number,
    options?: {
      stop?: string[];
      grammar?: LlamaGrammar;
      sampling?: { temperature: number; topP: number; seed: number };
    },
  ): Promise<string>;
}

async function reference(modelPath: string, threads: number): Promise<Reference> {
  const llama = await getLlama({ gpu: false, maxThreads: threads, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ contextSize: 2048, sequences: 1, threads });
  const chatWrapper = resolveChatWrapper(model);
  const sequence = context.getSequence();
  return {
    llama,
    model,
    context,
    async reply(prompt, maxTokens, options = {}) {
      await sequence.clearHistory();
      const chat = new LlamaChat({ contextSequence: sequence, chatWrapper, autoDisposeSequence: false });
      const history: ChatHistoryItem[] = [
        { type: 'user', text: prompt },
        { type: 'model', response: [] },
      ];
      try {
        const result = await chat.generateResponse(history, {
          maxTokens,
          temperature: 0,
          ...options.sampling,
          repeatPenalty: false,
          ...(options.stop === undefined ? {} : { customStopTriggers: options.stop }),
          ...(options.grammar === undefined ? {} : { grammar: options.grammar }),
        });
        return result.response;
      } finally {
        chat.dispose();
      }
    },
  };
}

function params(maxTokens: number, extra: Partial<GenerationParams> = {}): GenerationParams {
  return { maxTokens, temperature: 0, stop: [], format: { type: 'text' }, ...extra };
}

/** The engine on the CPU: `sequences` slots of `contextSize` tokens. */
const loadEngine = (
  modelPath: string,
  sequences: number,
  contextSize: number,
  threads = 1,
  batchSize?: number,
) => loadLlamaEngine({ modelPath, sequences, contextSize, threads, gpu: false, gpuLayers: 0, batchSize });

const generate = (engine: LlmEngine, prompt: string, p: GenerationParams) =>
  engine.generate([{ role: 'user', text: prompt }], p, {}, new AbortController().signal);

describe('the lockstep engine against node-llama-cpp’s LlamaChat (tiny model)', () => {
  let engine: LlmEngine;
  let ref: Reference;
  beforeAll(async () => {
    engine = await loadEngine(tinyModelPath(), 6, 512);
    ref = await reference(tinyModelPath(), 1);
  }, 60_000);
  afterAll(async () => {
    await engine.dispose();
    await ref.llama.dispose();
  });

  it('gives LlamaChat’s text for each prompt, alone and three at once, and counts every token', async () => {
    const prompts = ['chest pain since this morning', 'Bệnh nhân sốt cao 3 ngày', 'headache'];
    const expected = [];
    for (const prompt of prompts) expected.push(await ref.reply(prompt, 30));
    const together = await Promise.all(prompts.map((prompt) => generate(engine, prompt, params(30))));
    expect(together.map((r) => r.text)).toEqual(expected);
    expect(together.map((r) => r.finishReason)).toEqual(['length', 'length', 'length']);
    expect(together.map((r) => r.completionTokens)).toEqual([30, 30, 30]);
    const alone = await generate(engine, prompts[1]!, params(30));
    expect(alone.text).toBe(expected[1]);
  }, 60_000);

  it('stops where LlamaChat stops on a custom stop sequence', async () => {
    const free = await ref.reply('pulse 120', 30);
    const stop = free.slice(10, 13);
    const expected = await ref.reply('pulse 120', 30, { stop: [stop] });
    const result = await generate(engine, 'pulse 120', params(30, { stop: [stop] }));
    expect(result.text).toBe(expected);
    expect(result.finishReason).toBe('stop');
    expect(result.completionTokens).toBeLessThan(30);
  }, 60_000);

  it('streams exactly the reply, in pieces, and batches concurrent requests into shared steps', async () => {
    const before = engine.batching();
    const pieces: string[][] = [[], [], []];
    const results = await Promise.all(
      [0, 1, 2].map((i) =>
        engine.generate(
          [{ role: 'user', text: `patient ${String(i)}` }],
          params(40),
          { onText: (t) => pieces[i]!.push(t) },
          new AbortController().signal,
        ),
      ),
    );
    results.forEach((r, i) => {
      expect(pieces[i]!.join('')).toBe(r.text);
      expect(pieces[i]!.length).toBeGreaterThan(5);
    });
    const after = engine.batching();
    // Three generations of 40 tokens: 120 token steps (plus prompts) in about 40 shared steps.
    const steps = after.steps - before.steps;
    expect(after.sequences - before.sequences).toBe(120);
    expect(steps).toBeLessThanOrEqual(42);
  }, 60_000);

  it('samples as LlamaChat does for the same temperature, top_p and seed, and again the same for that seed', async () => {
    const sampling = { temperature: 1.2, topP: 0.9, seed: 7 };
    const expected = await ref.reply('fever and rash', 30, { sampling });
    const p = params(30, { temperature: 1.2, topP: 0.9, seed: 7 });
    const [a, b] = await Promise.all([
      generate(engine, 'fever and rash', p),
      generate(engine, 'fever and rash', p),
    ]);
    expect([a.text, b.text]).toEqual([expected, expected]);
    const other = await generate(engine, 'fever and rash', { ...p, seed: 8 });
    expect(other.text).not.toBe(expected);
    expect(expected).not.toBe(await ref.reply('fever and rash', 30));
  }, 60_000);

  it('applies frequency and presence penalties to the tokens it has generated', async () => {
    const plain = await generate(engine, 'cough', params(40));
    const penalised = await generate(engine, 'cough', params(40, { frequencyPenalty: 2 }));
    const present = await generate(engine, 'cough', params(40, { presencePenalty: 2 }));
    const distinct = (text: string) => new Set(ref.model.tokenize(text)).size;
    expect(penalised.text).not.toBe(plain.text);
    expect(present.text).not.toBe(plain.text);
    expect(distinct(penalised.text)).toBeGreaterThan(distinct(plain.text));
  }, 60_000);

  it('stops at once on abort, rejecting with the signal’s reason and freeing its sequence', async () => {
    const controller = new AbortController();
    const running = engine.generate([{ role: 'user', text: 'long' }], params(400), {}, controller.signal);
    await new Promise((r) => setTimeout(r, 50));
    controller.abort(new Error('client closed'));
    await expect(running).rejects.toThrow('client closed');
    for (let i = 0; i < 100 && engine.contextTokensInUse() > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(engine.contextTokensInUse()).toBe(0);
  }, 30_000);
});

describe('the lockstep engine on small batches, and unloaded while it generates (tiny model)', () => {
  let ref: Reference;
  beforeAll(async () => {
    ref = await reference(tinyModelPath(), 1);
  }, 60_000);
  afterAll(async () => {
    await ref.llama.dispose();
  });

  it('evaluates a prompt longer than the batch over several steps, beside a running generation', async () => {
    // 8 tokens a step: the long prompt takes several steps, sharing them with the short request's
    // tokens, and both replies are LlamaChat's.
    const engine = await loadEngine(tinyModelPath(), 2, 512, 1, 8);
    try {
      const long = 'A 67-year-old man with a history of hypertension and diabetes presents with chest pain';
      const expected = [await ref.reply('fever', 20), await ref.reply(long, 20)];
      expect(ref.model.tokenize(long).length).toBeGreaterThan(16);
      const short = generate(engine, 'fever', params(20));
      await new Promise((r) => setTimeout(r, 5));
      const results = await Promise.all([short, generate(engine, long, params(20))]);
      expect(results.map((r) => r.text)).toEqual(expected);
      expect(results.map((r) => r.completionTokens)).toEqual([20, 20]);
    } finally {
      await engine.dispose();
    }
  }, 60_000);

  it('ends a generation in work with an error when the model is unloaded, and frees the context after its step', async () => {
    const engine = await loadEngine(tinyModelPath(), 1, 512);
    let tokens = 0;
    const running = engine.generate(
      [{ role: 'user', text: 'long' }],
      params(400),
      { onTokens: (n) => (tokens += n) },
      new AbortController().signal,
    );
    while (tokens < 5) await new Promise((r) => setTimeout(r, 2));
    const outcome = expect(running).rejects.toMatchObject({
      status: 503,
      message: 'the model is being unloaded: the service is stopping',
    });
    await engine.dispose();
    await outcome;
    expect(tokens).toBeLessThan(400);
    // Nothing starts on an unloaded engine: a later request gets the same 503.
    expect(() => engine.countPromptTokens([{ role: 'user', text: 'again' }])).toThrow(
      'the model is being unloaded',
    );
    await expect(generate(engine, 'again', params(5))).rejects.toMatchObject({
      status: 503,
      message: 'the model is being unloaded: the service is stopping',
    });
  }, 60_000);
});

describeReal(
  missingModel(REAL, 'llm-base'),
  'the lockstep engine against LlamaChat (real llm-base GGUF)',
  () => {
    let engine: LlmEngine;
    let ref: Reference;
    beforeAll(async () => {
      engine = await loadEngine(REAL, 4, 2048, 2);
      ref = await reference(REAL, 2);
    }, 120_000);
    afterAll(async () => {
      await engine.dispose();
      await ref.llama.dispose();
    });

    const prompts = ['The main symptoms of dengue fever are', 'Triệu chứng chính của bệnh lao là'];

    it('gives LlamaChat’s text, English and Vietnamese, one at a time', async () => {
      const expected = [];
      for (const prompt of prompts) expected.push(await ref.reply(prompt, 24));
      const alone = [];
      for (const prompt of prompts) alone.push((await generate(engine, prompt, params(24))).text);
      expect(alone).toEqual(expected);
    }, 120_000);

    it('decodes two at once in shared steps, to full length', async () => {
      // Not compared token for token: llama.cpp's batched evaluation is not bit-identical to one
      // sequence alone (other kernels, other summation order), and on this base model the greedy
      // choice after the Vietnamese prompt is close enough to flip (CI saw it). Exact equality under
      // sharing is asserted on the tiny model, whose logits are far apart.
      const before = engine.batching();
      const together = await Promise.all(prompts.map((prompt) => generate(engine, prompt, params(24))));
      const after = engine.batching();
      expect(together.map((r) => [r.finishReason, r.completionTokens])).toEqual([
        ['length', 24],
        ['length', 24],
      ]);
      expect(after.sequences - before.sequences).toBe(48);
      expect(after.steps - before.steps).toBeLessThanOrEqual(27);
    }, 120_000);

    it('gives the same text when a request reuses the cached prefix of an earlier one (sliding-window model)', async () => {
      // Gemma 3 keeps most layers' KV in a sliding window: the kept prefix must still be exact.
      const first = 'A 45-year-old woman presents with fever, cough and shortness of breath. The most likely';
      const longer = `${first} diagnosis, given a travel history to Hanoi, is`;
      const expected = [await ref.reply(first, 20), await ref.reply(longer, 20)];
      const again = [
        await generate(engine, first, params(20)),
        await generate(engine, first, params(20)),
        await generate(engine, longer, params(20)),
      ];
      expect(again.map((r) => r.text)).toEqual([expected[0], expected[0], expected[1]]);
      // The second and third kept the prompt the first evaluated (all but its last token).
      const firstTokens = ref.model.tokenize(first).length;
      expect(again[1]!.cachedPromptTokens).toBeGreaterThanOrEqual(firstTokens);
      expect(again[2]!.cachedPromptTokens).toBeGreaterThanOrEqual(firstTokens - 1);
    }, 120_000);

    it('starts a sequence over when the sliding window no longer holds what its kept prefix needs', async () => {
      // A prompt longer than the window (512) and the batch: most layers' cache then holds only its
      // last positions, so a later prompt sharing just its beginning cannot continue from there.
      const notes = Array.from(
        { length: 90 },
        (_, i) => `Day ${String(i + 1)}: temperature ${String(37 + (i % 3))}, pulse ${String(80 + i)}.`,
      );
      const long = `Ward notes. ${notes.join(' ')} Summary:`;
      const short = `Ward notes. ${notes.slice(0, 10).join(' ')} Plan:`;
      expect(ref.model.tokenize(long).length).toBeGreaterThan(1200);
      const expected = [await ref.reply(long, 12), await ref.reply(short, 12)];
      const first = await generate(engine, long, params(12));
      const second = await generate(engine, short, params(12));
      expect([first.text, second.text]).toEqual(expected);
      expect(second.cachedPromptTokens).toBe(0);
    }, 180_000);
  },
);
