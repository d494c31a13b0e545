import { basename } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { getLlama, type Llama, type LlamaModel } from 'node-llama-cpp';
import OpenAI from 'openai';
import { startLlm, tinyModelPath, TOKEN, type LlmTestServer } from './helpers.js';

// The official SDK against the service on a real socket, with the tiny generated model: its greedy
// output is gibberish but the same on every run, and it never ends by itself (see the fixture).

const MODEL = 'alpha-2-9b-it';
const messages = [
  { role: 'system' as const, content: 'You are a careful clinical assistant.' },
  { role: 'user' as const, content: 'Bệnh nhân nam 54 tuổi, đau ngực trái 2 giờ. Chẩn đoán?' },
];

let srv: LlmTestServer;
let client: OpenAI;
let llama: Llama;
let model: LlamaModel;

beforeAll(async () => {
  srv = await startLlm();
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
  llama = await getLlama({ gpu: false, maxThreads: 1 });
  model = await llama.loadModel({ modelPath: tinyModelPath() });
});
afterAll(async () => {
  await srv.close();
  await model.dispose();
  await llama.dispose();
});

describe('chat completions through the openai SDK', () => {
  it('answers deterministically under greedy sampling, finishing with length at max_tokens', async () => {
    // The spec's `max_tokens` (the SDK deprecates it for max_completion_tokens; both work).
    const ask = () =>
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      client.chat.completions.create({ model: MODEL, messages, max_tokens: 40, temperature: 0 });
    const [a, b] = [await ask(), await ask()];
    expect(a.id).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
    expect(a.id).not.toBe(b.id);
    expect(a.object).toBe('chat.completion');
    expect(a.model).toBe(MODEL);
    expect(a.choices).toHaveLength(1);
    expect(a.choices[0]!.message.role).toBe('assistant');
    expect(a.choices[0]!.finish_reason).toBe('length');
    expect(a.choices[0]!.message.content!.length).toBeGreaterThan(10);
    expect(b.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
    expect(a.usage).toEqual({
      prompt_tokens: a.usage!.prompt_tokens,
      completion_tokens: 40,
      total_tokens: a.usage!.prompt_tokens + 40,
      prompt_tokens_details: { cached_tokens: expect.any(Number) },
    });
  });

  it('streams the same text as chat.completion.chunk deltas, then the usage, then [DONE]', async () => {
    const whole = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_completion_tokens: 40,
      temperature: 0,
    });
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_completion_tokens: 40,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThan(5);
    const finishes = chunks.map((c) => c.choices[0]?.finish_reason ?? null).filter((f) => f !== null);
    expect(finishes).toEqual(['length']);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(whole.usage);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('counts prompt tokens as the tokenizer does on the model’s chat template', async () => {
    const res = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_completion_tokens: 1,
      temperature: 0,
    });
    // The GGUF's ChatML template, rendered by hand; node-llama-cpp prepends BOS.
    const rendered =
      '<|im_start|>system\nYou are a careful clinical assistant.<|im_end|>\n' +
      `<|im_start|>user\n${messages[1]!.content}<|im_end|>\n<|im_start|>assistant\n`;
    const tokens = model.tokenize(rendered, true);
    expect(res.usage!.prompt_tokens).toBe(tokens.length + 1);
    expect(res.usage!.completion_tokens).toBe(1);
  });

  it('stops before a stop sequence, with finish_reason stop, in both modes', async () => {
    const free = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_completion_tokens: 40,
      temperature: 0,
    });
    const text = free.choices[0]!.message.content!;
    const stop = text.slice(12, 15);
    const expected = text.slice(0, text.indexOf(stop));
    const stopped = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_completion_tokens: 40,
      temperature: 0,
      stop: [stop, 'never-seen'],
    });
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    expect(stopped.choices[0]!.message.content).toBe(expected);
    expect(stopped.usage!.completion_tokens).toBeLessThan(40);

    const stream = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_completion_tokens: 40,
      temperature: 0,
      stop,
      stream: true,
    });
    let streamed = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(streamed).toBe(expected);
    expect(finish).toBe('stop');
  });

  it('follows response_format json_schema: the reply parses and matches the schema', async () => {
    const res = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Triage this patient as JSON.' }],
      max_completion_tokens: 200,
      temperature: 0,
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'triage',
          strict: true,
          schema: {
            type: 'object',
            properties: {
              urgency: { type: 'string', enum: ['emergency', 'urgent', 'routine'] },
              admit: { type: 'boolean' },
            },
            required: ['urgency', 'admit'],
            additionalProperties: false,
          },
        },
      },
    });
    expect(res.choices[0]!.finish_reason).toBe('stop');
    const parsed = JSON.parse(res.choices[0]!.message.content!) as Record<string, unknown>;
    expect(Object.keys(parsed).sort()).toEqual(['admit', 'urgency']);
    expect(['emergency', 'urgent', 'routine']).toContain(parsed['urgency']);
    expect(typeof parsed['admit']).toBe('boolean');
  });

  it('enforces anyOf, a nullable object, definitions and an empty schema: each reply parses and matches', async () => {
    const ask = async (schema?: Record<string, unknown>): Promise<unknown> => {
      const res = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'Answer as JSON.' }],
        max_completion_tokens: 300,
        temperature: 0,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'answer', ...(schema === undefined ? {} : { schema }) },
        },
      });
      expect(res.choices[0]!.finish_reason).toBe('stop');
      return JSON.parse(res.choices[0]!.message.content!) as unknown;
    };
    // As zod-to-json-schema writes a nullable union and shared definitions.
    const reply = (await ask({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        code: { anyOf: [{ $ref: '#/definitions/code' }, { type: 'null' }] },
        vitals: { type: ['object', 'null'], properties: { hr: { type: 'integer' } }, required: ['hr'] },
      },
      required: ['code', 'vitals'],
      additionalProperties: false,
      definitions: { code: { type: 'string', enum: ['I21', 'J18'] } },
    })) as Record<string, unknown>;
    expect(Object.keys(reply).sort()).toEqual(['code', 'vitals']);
    expect([null, 'I21', 'J18']).toContain(reply['code']);
    const vitals = reply['vitals'] as { hr: unknown } | null;
    if (vitals !== null) expect(Number.isInteger(vitals.hr)).toBe(true);
    // No schema, or an empty one: any JSON (it was always `null` before).
    expect(typeof (await ask())).toBe('object');
    expect(await ask({})).not.toBeNull();
  });

  it('accepts json_object and text content parts; a seed is accepted at temperature > 0', async () => {
    const res = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'JSON please' }] }],
      max_completion_tokens: 300,
      temperature: 0.8,
      top_p: 0.9,
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      seed: 7,
      response_format: { type: 'json_object' },
    });
    const content = res.choices[0]!.message.content!;
    if (res.choices[0]!.finish_reason === 'stop') expect(() => JSON.parse(content) as unknown).not.toThrow();
    expect(content.trimStart().startsWith('{')).toBe(true);
  });

  it('lists the alias in /v1/models, with the name of the model behind it and no licence it cannot know', async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual([MODEL]);
    // The tiny model is mounted outside the manifest's path and its GGUF states no licence.
    expect(list.data[0]).toMatchObject({
      root: basename(tinyModelPath()),
      name: 'tiny-llama-test',
      license: null,
    });
  });
});

describe('errors arrive as the SDK’s typed errors', () => {
  it('401 AuthenticationError for a wrong token', async () => {
    const bad = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    const error = await bad.chat.completions
      .create({ model: MODEL, messages, max_completion_tokens: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
  });

  it('400 BadRequestError when prompt plus max_tokens exceed the context, saying by how much', async () => {
    const error = await client.chat.completions
      .create({ model: MODEL, messages, max_completion_tokens: 4090 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const e = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.code).toBe('context_length_exceeded');
    const usage = (await client.chat.completions.create({ model: MODEL, messages, max_completion_tokens: 1 }))
      .usage!;
    const over = usage.prompt_tokens + 4090 - 4096;
    expect(e.message).toContain('maximum context length is 4096 tokens');
    expect(e.message).toContain(`${over} tokens over`);
  });

  it('400 for an image part and for n > 1; 404 NotFoundError for an unknown model', async () => {
    const image = await client.chat.completions
      .create({
        model: MODEL,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }],
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(image).toBeInstanceOf(OpenAI.BadRequestError);
    expect((image as Error).message).toContain('text only');
    const n = await client.chat.completions.create({ model: MODEL, messages, n: 2 }).catch((e: unknown) => e);
    expect(n).toBeInstanceOf(OpenAI.BadRequestError);
    const unknown = await client.chat.completions
      .create({ model: 'gpt-4o', messages, max_completion_tokens: 1 })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('400 invalid_json_schema for a schema the grammar cannot enforce, naming each keyword', async () => {
    const error = await client.chat.completions
      .create({
        model: MODEL,
        messages,
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'x',
            schema: {
              type: 'object',
              properties: { id: { type: 'string', pattern: '^[A-Z]\\d+$' }, n: { type: 'foo' } },
              required: ['id', 'age'],
            },
          },
        },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const e = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.code).toBe('invalid_json_schema');
    expect(e.param).toBe('response_format');
    expect(e.message).toContain('#/properties/id: "pattern" is not supported');
    expect(e.message).toContain('#/properties/n/type: "foo" is not a JSON schema type');
    expect(e.message).toContain('#/required: "age" is not in properties');
  });

  it('422 UnprocessableEntityError names the failing field', async () => {
    const error = await client.chat.completions
      .create({ model: MODEL, messages, temperature: 5 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((error as InstanceType<typeof OpenAI.UnprocessableEntityError>).param).toBe('temperature');
  });
});

describe('a paced stream (STREAM_INTERVAL_MS)', () => {
  it('sends the first text at once, then at most a chunk per interval, the same text', async () => {
    const paced = await startLlm({ STREAM_INTERVAL_MS: '1000' });
    try {
      const pacedClient = new OpenAI({ baseURL: `${paced.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
      const request = { model: MODEL, messages, max_completion_tokens: 40, temperature: 0 };
      const whole = await pacedClient.chat.completions.create(request);
      const started = Date.now();
      const stream = await pacedClient.chat.completions.create({ ...request, stream: true });
      const contents: string[] = [];
      const finishes: string[] = [];
      for await (const chunk of stream) {
        const content = chunk.choices[0]?.delta.content ?? '';
        if (content !== '') contents.push(content);
        if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
      }
      // The first piece at once, then at most one chunk a second, the last when it ends: 40 tokens
      // of the tiny model take a fraction of a second, so usually 2 chunks.
      const seconds = Math.floor((Date.now() - started) / 1000);
      expect(contents.length).toBeGreaterThanOrEqual(2);
      expect(contents.length).toBeLessThanOrEqual(2 + seconds);
      expect(contents.join('')).toBe(whole.choices[0]!.message.content);
      expect(finishes).toEqual(['length']);
    } finally {
      await paced.close();
    }
  });
});
