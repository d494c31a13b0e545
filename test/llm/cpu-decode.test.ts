import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { LlmEngine } from '../../services/llm/src/adapters/engine.js';
import { loadLlamaEngine } from '../../services/llm/src/adapters/llama-engine.js';
import { HUGE_PAGES_TUNABLE, transparentHugePages } from '../../services/llm/src/adapters/model-memory.js';
import { describeReal, missingModel, realModelPath } from '../fixtures/real-component.js';
import { auth, post, startLlmEntry, tinyModelPath, type LlmProcess } from './helpers.js';

// The service on a CPU decode, started through its entry as the runner and the operator start it:
// libuv's pool then has one thread, so each step's samples are queued behind its decode
// (lockstep.ts); the weights are read into memory, on huge pages where glibc asks for them
// (model-memory.ts).

const REAL = realModelPath('llm', 'gemma-3-270m-q4_k_m.gguf');

interface StatusBody {
  readonly uv_threadpool_size: number;
  readonly model: { readonly size_bytes: number };
  readonly model_memory: { readonly mapped: boolean | null; readonly huge_pages_bytes: number | null };
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

describeReal(missingModel(REAL, 'llm-base'), 'the weights of a CPU decode (real llm-base GGUF)', () => {
  const start = (env: Record<string, string>): Promise<LlmProcess> =>
    startLlmEntry(
      { MODEL_PATH: REAL, THREADS: '2', GPU: 'false', LOG_LEVEL: 'warn', ...env },
      '/health',
      120_000,
    );

  it('are read into memory onto huge pages when glibc is asked for them, and said so when not', async () => {
    const mode = await transparentHugePages();
    const asked = await start({ GLIBC_TUNABLES: HUGE_PAGES_TUNABLE });
    const plain = await start({});
    try {
      const [withTunable, without] = [await status(asked), await status(plain)];
      expect([withTunable.model_memory.mapped, without.model_memory.mapped]).toEqual([false, false]);
      const size = withTunable.model.size_bytes;
      if (mode === 'never') {
        // The host allows none: the service says why, and runs.
        expect(withTunable.model_memory.huge_pages_bytes).toBeLessThan(size / 2);
        expect(asked.output()).toContain('transparent huge pages off');
      } else {
        expect(withTunable.model_memory.huge_pages_bytes).toBeGreaterThanOrEqual(size / 2);
        expect(asked.output()).not.toContain('huge pages');
      }
      if (mode === 'madvise') {
        expect(without.model_memory.huge_pages_bytes).toBeLessThan(size / 2);
        expect(plain.output()).toContain(`started without GLIBC_TUNABLES=${HUGE_PAGES_TUNABLE}`);
      }
    } finally {
      asked.stop();
      plain.stop();
    }
  }, 240_000);

  it('are mapped from the file with MODEL_MMAP=true, and nothing is said of huge pages', async () => {
    const mapped = await start({ MODEL_MMAP: 'true' });
    try {
      expect((await status(mapped)).model_memory.mapped).toBe(true);
      expect(mapped.output()).not.toContain('huge pages');
    } finally {
      mapped.stop();
    }
  }, 120_000);
});
