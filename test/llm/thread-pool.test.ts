import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { llmConfigSchema, loadLlmConfig } from '../../services/llm/src/config.js';
import {
  DEFAULT_SLOTS,
  expectsGpu,
  recommendedPoolSize,
  threadPoolChoice,
  uvThreadpoolSizeOf,
  type HostDevices,
} from '../../services/llm/src/thread-pool.js';
import { auth, startLlm, startLlmEntry, tinyModelPath } from './helpers.js';

const cpuHost: HostDevices = { platform: 'linux', nvidia: false, renderNode: false };
const nvidiaHost: HostDevices = { platform: 'linux', nvidia: true, renderNode: false };

describe('UV_THREADPOOL_SIZE, read as libuv reads it', () => {
  it('follows atoi into an unsigned int: 4 unset, 1 for 0 or no number, at most 1024', () => {
    expect(uvThreadpoolSizeOf(undefined)).toBe(4);
    expect(uvThreadpoolSizeOf('1')).toBe(1);
    expect(uvThreadpoolSizeOf(' 8')).toBe(8);
    expect(uvThreadpoolSizeOf('2threads')).toBe(2);
    expect(uvThreadpoolSizeOf('0')).toBe(1);
    expect(uvThreadpoolSizeOf('')).toBe(1);
    expect(uvThreadpoolSizeOf('many')).toBe(1);
    expect(uvThreadpoolSizeOf('-1')).toBe(1024);
    expect(uvThreadpoolSizeOf('5000')).toBe(1024);
  });

  it('is what the config reports, from the environment the process started with', () => {
    const base = { API_TOKEN: 't', MODEL_PATH: '/m.gguf' };
    expect(loadLlmConfig(base).uvThreadpoolSize).toBe(4);
    expect(loadLlmConfig({ ...base, UV_THREADPOOL_SIZE: '1' }).uvThreadpoolSize).toBe(1);
  });
});

describe('the pool size the entry chooses', () => {
  it('is 1 for decoding on the CPU and one per slot plus one on a GPU', () => {
    expect(recommendedPoolSize(false, 3)).toBe(1);
    expect(recommendedPoolSize(false, 16)).toBe(1);
    expect(recommendedPoolSize(true, 3)).toBe(4);
    expect(recommendedPoolSize(true, 1)).toBe(2);
    expect(recommendedPoolSize(true, 5000)).toBe(1024);
  });

  it('expects a GPU from GPU and GPU_LAYERS, and for `auto` from the host’s devices', () => {
    expect(expectsGpu({}, cpuHost)).toBe(false);
    expect(expectsGpu({}, nvidiaHost)).toBe(true);
    expect(expectsGpu({ GPU: 'auto' }, { ...cpuHost, renderNode: true })).toBe(true);
    expect(expectsGpu({}, { ...cpuHost, platform: 'darwin' })).toBe(true);
    expect(expectsGpu({ GPU: 'cuda' }, cpuHost)).toBe(true);
    expect(expectsGpu({ GPU: 'false' }, nvidiaHost)).toBe(false);
    expect(expectsGpu({ GPU_LAYERS: '0' }, nvidiaHost)).toBe(false);
    expect(expectsGpu({ GPU: 'cuda', GPU_LAYERS: 'max' }, cpuHost)).toBe(true);
  });

  it('sizes for the slots MAX_CONCURRENCY gives, 3 when unset (the config’s default)', () => {
    expect(DEFAULT_SLOTS).toBe(llmConfigSchema.parse({}).MAX_CONCURRENCY);
    expect(threadPoolChoice({}, nvidiaHost)).toEqual({ size: 4, given: false });
    expect(threadPoolChoice({ MAX_CONCURRENCY: '8' }, nvidiaHost).size).toBe(9);
    expect(threadPoolChoice({ MAX_CONCURRENCY: 'x' }, nvidiaHost).size).toBe(4);
    expect(threadPoolChoice({ MAX_CONCURRENCY: '8' }, cpuHost)).toEqual({
      size: 1,
      given: false,
    });
  });

  it('keeps a UV_THREADPOOL_SIZE that is given, as libuv will read it', () => {
    expect(threadPoolChoice({ UV_THREADPOOL_SIZE: '2' }, nvidiaHost)).toEqual({
      size: 2,
      given: true,
    });
    expect(threadPoolChoice({ UV_THREADPOOL_SIZE: '' }, cpuHost)).toEqual({
      size: 1,
      given: true,
    });
  });
});

describe('a service whose pool does not suit where it decodes', () => {
  it('warns once the model is loaded, naming the size to start with; with 1 on the CPU it says nothing', async () => {
    const warning = /decoding on the CPU with 3 slots runs best with 1\. Start it with UV_THREADPOOL_SIZE=1/;
    for (const [size, warns] of [
      ['4', true],
      ['1', false],
    ] as const) {
      const srv = await startLlm({ UV_THREADPOOL_SIZE: size });
      try {
        expect(srv.service.host.engine).toBeDefined();
        expect([size, srv.logs.some((l) => warning.test(String(l['msg'])))]).toEqual([size, warns]);
      } finally {
        await srv.close();
      }
    }
  });
});

/**
 * Starts the built entry with `env`, waits until `path` answers 200, and returns what `read` makes
 * of that answer and the process's id.
 */
async function whenAnswering<T>(
  env: Record<string, string>,
  path: string,
  read: (res: Response, pid: number) => T | Promise<T>,
  timeoutMs = 20_000,
): Promise<T> {
  const entry = await startLlmEntry(env, path, timeoutMs);
  try {
    return await read(await fetch(`${entry.url}${path}`, { headers: auth }), entry.pid);
  } finally {
    entry.stop();
  }
}

/** The pool size the entry reports, and the process's thread count (libuv's pool among them). */
const bootProcess = (env: Record<string, string>): Promise<{ reported: number; threads: number }> =>
  whenAnswering(env, '/status', async (res, pid) => {
    const { uv_threadpool_size: reported } = (await res.json()) as { uv_threadpool_size: number };
    return { reported, threads: readdirSync(`/proc/${pid}/task`).length };
  });

describe('the entry, dist/boot.cjs', () => {
  it('sizes the pool before anything starts it: 1 on the CPU, 4 with GPU=cuda, a given size kept', async () => {
    const cpu = await bootProcess({ GPU: 'false' });
    const gpu = await bootProcess({ GPU: 'cuda' });
    const given = await bootProcess({ GPU: 'cuda', UV_THREADPOOL_SIZE: '2' });
    expect([cpu.reported, gpu.reported, given.reported]).toEqual([1, 4, 2]);
    // The processes differ only in libuv's pool, so their thread counts differ by its size.
    expect([gpu.threads - cpu.threads, given.threads - cpu.threads]).toEqual([3, 1]);
  });
});

/** Each thread's nice value (/proc/PID/task/TID/stat, field 19), the event loop's first. */
function niceValues(pid: number): number[] {
  const tids = readdirSync(`/proc/${pid}/task`).sort(
    (a, b) => Number(a !== String(pid)) - Number(b !== String(pid)),
  );
  return tids.map((tid) => {
    const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(fields[16]);
  });
}

describe('the event loop on a CPU decode', () => {
  it('takes EVENT_LOOP_NICE once the model is loaded, and only its own thread does', async () => {
    // Once /health answers 200 the model is loaded, and the event loop has its priority.
    const niced = (env: Record<string, string>): Promise<number[]> =>
      whenAnswering(
        { MODEL_PATH: tinyModelPath(), THREADS: '1', GPU: 'false', ...env },
        '/health',
        (_, pid) => niceValues(pid),
        60_000,
      );
    const [main, ...others] = await niced({});
    expect(main).toBe(10);
    // libuv's pool (where llama.cpp's threads come from) and V8's threads keep their priority.
    expect(others.length).toBeGreaterThan(1);
    expect(new Set(others)).toEqual(new Set([0]));
    expect((await niced({ EVENT_LOOP_NICE: '0' }))[0]).toBe(0);
  }, 120_000);
});
