import { describe, expect, it } from '@jest/globals';
import { loadLlmConfig, uvThreadpoolSizeOf } from '../../services/llm/src/config.js';
import { startLlm } from './helpers.js';

describe('the libuv thread pool size the LLM reports', () => {
  it('reads UV_THREADPOOL_SIZE as libuv does', () => {
    expect(uvThreadpoolSizeOf(undefined)).toBe(4);
    expect(uvThreadpoolSizeOf('1')).toBe(1);
    expect(uvThreadpoolSizeOf(' 8')).toBe(8);
    expect(uvThreadpoolSizeOf('2threads')).toBe(2);
    // atoi gives 0 for these, and libuv takes 0 as 1.
    expect(uvThreadpoolSizeOf('0')).toBe(1);
    expect(uvThreadpoolSizeOf('')).toBe(1);
    expect(uvThreadpoolSizeOf('many')).toBe(1);
    // An unsigned int in libuv: a negative number wraps round to the cap, as does anything above it.
    expect(uvThreadpoolSizeOf('-1')).toBe(1024);
    expect(uvThreadpoolSizeOf('5000')).toBe(1024);
  });

  it('takes it from the environment the process started with', () => {
    const base = { API_TOKEN: 't', MODEL_PATH: '/m.gguf' };
    expect(loadLlmConfig(base).uvThreadpoolSize).toBe(4);
    expect(loadLlmConfig({ ...base, UV_THREADPOOL_SIZE: '1' }).uvThreadpoolSize).toBe(1);
  });
});

describe('a service started with another pool size', () => {
  it('warns at start, naming the variable to set; with 1 it says nothing', async () => {
    const warning = /start this service with UV_THREADPOOL_SIZE=1/;
    for (const [size, warns] of [
      ['4', true],
      ['1', false],
    ] as const) {
      const srv = await startLlm({ UV_THREADPOOL_SIZE: size }, { start: false });
      try {
        expect([size, srv.logs.some((l) => warning.test(String(l['msg'])))]).toEqual([size, warns]);
      } finally {
        await srv.close();
      }
    }
  });
});
