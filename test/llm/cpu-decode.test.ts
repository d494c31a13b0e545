import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { LlmEngine } from '../../services/llm/src/adapters/engine.js';
import { loadLlamaEngine } from '../../services/llm/src/adapters/llama-engine.js';
import { auth, post, startLlmEntry, tinyModelPath, type LlmProcess } from './helpers.js';

// The service on a CPU decode, started through its entry as the runner and the operator start it:
// libuv's pool then has one thread, so each step's samples are queued behind its decode
// (lockstep.ts).

interface StatusBody {
  readonly uv_threadpool_size: number;
}

const status = async (entry: LlmProcess): Promise<StatusBody> =>
  (await (await fetch(`${entry.url}/status`, { headers: auth })).json()) as StatusBody;

describe('the entry’s CPU decode, samples queued behind each decode (tiny model)', () => {
  let engine: LlmEngine;
  let entry: LlmProcess;
  beforeAll(async () => {
    // This process's pool has more than one thread: its engine waits for each decode to be back.
    engine = await loadLlamaEngine({
      modelPath: tinyModelPath(),
      sequences: 3,
      contextSize: 512,
      threads: 1,
      gpu: false,
      gpuLayers: 0,
      uvThreadpoolSize: 4,
    });
    entry = await startLlmEntry(
      { MODEL_PATH: tinyModelPath(), THREADS: '1', GPU: 'false', CONTEXT_SIZE: '512' },
      '/health',
      60_000,
    );
  }, 90_000);
  afterAll(async () => {
    entry.stop();
    await engine.dispose();
  });

  it('gives, three at once, the greedy replies of an engine that waits for each decode', async () => {
    expect((await status(entry)).uv_threadpool_size).toBe(1);
    const prompts = ['chest pain since this morning', 'Bệnh nhân sốt cao 3 ngày', 'headache'];
    const params = { maxTokens: 30, temperature: 0, stop: [], format: { type: 'text' as const } };
    const expected = await Promise.all(
      prompts.map((text) =>
        engine.generate([{ role: 'user', text }], params, {}, new AbortController().signal),
      ),
    );
    const replies = await Promise.all(
      prompts.map(async (content) => {
        const res = await post(`${entry.url}/v1/chat/completions`, {
          model: 'alpha-2-9b-it',
          messages: [{ role: 'user', content }],
          temperature: 0,
          max_tokens: 30,
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as { choices: { message: { content: string } }[] };
        return body.choices[0]?.message.content;
      }),
    );
    expect(replies).toEqual(expected.map((r) => r.text));
    expect(new Set(replies).size).toBe(3);
  }, 60_000);
});
