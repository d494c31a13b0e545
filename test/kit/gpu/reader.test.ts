import { describe, expect, it } from '@jest/globals';
import { GpuStatusReader, NVIDIA_SMI_ARGS, type CommandRunner } from '@clinicalsuite/kit/gpu';
import { DRIVER_FAILURE, execError, fixture, manualClock, scriptedRunner } from './helpers.js';

const L4S = fixture('l4-x2.txt');

describe('GpuStatusReader with an injected runner', () => {
  it('runs nvidia-smi with the query and reports the GPUs', async () => {
    const clock = manualClock();
    const runner = scriptedRunner(L4S);
    const status = await new GpuStatusReader({ runner, now: clock.now }).read();

    expect(runner.calls).toEqual([{ file: 'nvidia-smi', args: NVIDIA_SMI_ARGS, timeout: 3000 }]);
    expect(status.available).toBe(true);
    expect(status.device).toBe('cuda');
    expect(status.gpus.map((gpu) => gpu.uuid)).toEqual([
      'GPU-8f6e2d41-7c3b-4a9e-b512-6d0e9f3a1c27',
      'GPU-c2a94b70-15de-4f83-a6b9-0e7d3c58f412',
    ]);
    expect(status.readAt).toBe('2025-01-15T10:00:00.000Z');
    expect(status).not.toHaveProperty('error');
  });

  it('passes the binary path and timeout it was given', async () => {
    const runner = scriptedRunner(L4S);
    await new GpuStatusReader({ runner, binary: '/usr/bin/nvidia-smi', timeoutMs: 1500 }).read();
    expect(runner.calls[0]).toMatchObject({ file: '/usr/bin/nvidia-smi', timeout: 1500 });
  });

  it('serves a cached reading within cacheMs and runs again after it', async () => {
    const clock = manualClock();
    const runner = scriptedRunner(L4S, fixture('h100-80gb-hbm3.txt'));
    const reader = new GpuStatusReader({ runner, now: clock.now, cacheMs: 2000 });

    const first = await reader.read();
    clock.advance(1999);
    expect(await reader.read()).toBe(first);
    expect(runner.calls).toHaveLength(1);

    clock.advance(1);
    const third = await reader.read();
    expect(runner.calls).toHaveLength(2);
    expect(third.gpus.map((gpu) => gpu.name)).toEqual(['NVIDIA H100 80GB HBM3']);
    expect(third.readAt).toBe('2025-01-15T10:00:02.000Z');
  });

  it('lets concurrent reads share one run', async () => {
    let release: (value: { stdout: string }) => void = () => undefined;
    let calls = 0;
    const runner: CommandRunner = () => {
      calls += 1;
      return new Promise((resolve) => (release = resolve));
    };
    const reader = new GpuStatusReader({ runner, cacheMs: 0 });
    const reads = Promise.all([reader.read(), reader.read(), reader.read()]);
    await new Promise((resolve) => setImmediate(resolve));
    release({ stdout: L4S });
    const [a, b, c] = await reads;
    expect(calls).toBe(1);
    expect(a).toBe(b);
    expect(b).toBe(c);
    expect(a.gpus).toHaveLength(2);
  });

  it('reports cpu without an error when there is no nvidia-smi (ENOENT)', async () => {
    const runner = scriptedRunner(execError({ code: 'ENOENT', errno: -2, syscall: 'spawn nvidia-smi' }));
    const status = await new GpuStatusReader({ runner }).read();
    expect(status).toEqual({ available: false, device: 'cpu', gpus: [], readAt: expect.any(String) });
    expect(status).not.toHaveProperty('error');
  });

  it('reports the driver failure nvidia-smi prints, with its exit code', async () => {
    const runner = scriptedRunner(execError({ code: 9, stdout: DRIVER_FAILURE, stderr: '' }));
    const status = await new GpuStatusReader({ runner }).read();
    expect(status).toMatchObject({ available: false, device: 'cpu', gpus: [] });
    expect(status.error).toBe(
      "nvidia-smi exited with code 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
    );
  });

  it('cuts a long failure message to 200 characters', async () => {
    const runner = scriptedRunner(execError({ code: 1, stderr: `${'x'.repeat(500)}\nsecond line` }));
    const { error } = await new GpuStatusReader({ runner }).read();
    expect(error).toBe(`nvidia-smi exited with code 1: ${'x'.repeat(169)}`);
  });

  it('reports a timeout when execFile killed nvidia-smi', async () => {
    const runner = scriptedRunner(execError({ killed: true, code: null, signal: 'SIGKILL' }));
    const status = await new GpuStatusReader({ runner, timeoutMs: 3000 }).read();
    expect(status).toMatchObject({
      available: false,
      device: 'cpu',
      error: 'nvidia-smi timed out after 3000 ms',
    });
  });

  it('gives up on a run that never settles and starts no second process until it does', async () => {
    let release: (value: { stdout: string }) => void = () => undefined;
    let calls = 0;
    const runner: CommandRunner = () => {
      calls += 1;
      return calls === 1 ? new Promise((resolve) => (release = resolve)) : Promise.resolve({ stdout: L4S });
    };
    const reader = new GpuStatusReader({ runner, timeoutMs: 20, cacheMs: 0 });

    const started = Date.now();
    expect(await reader.read()).toMatchObject({
      available: false,
      error: 'nvidia-smi timed out after 20 ms',
    });
    expect(Date.now() - started).toBeLessThan(2500);

    expect((await reader.read()).error).toBe('nvidia-smi from an earlier read has not exited yet');
    expect(calls).toBe(1);

    release({ stdout: '' });
    await new Promise((resolve) => setImmediate(resolve));
    expect((await reader.read()).available).toBe(true);
    expect(calls).toBe(2);
  });

  it('never throws, even when the runner throws synchronously', async () => {
    const runner: CommandRunner = () => {
      throw new TypeError('bad runner');
    };
    expect(await new GpuStatusReader({ runner }).read()).toMatchObject({
      available: false,
      error: 'nvidia-smi failed: bad runner',
    });
  });

  it('reports output with no GPU rows as an error', async () => {
    const status = await new GpuStatusReader({ runner: scriptedRunner('No devices were found\n') }).read();
    expect(status).toMatchObject({ available: false, device: 'cpu', gpus: [] });
    expect(status.error).toBe('nvidia-smi printed no GPU rows: No devices were found');
  });

  it('reports only the GPUs in visibleDevices', async () => {
    const one = await new GpuStatusReader({ runner: scriptedRunner(L4S), visibleDevices: '1' }).read();
    expect(one.available).toBe(true);
    expect(one.gpus.map((gpu) => gpu.index)).toEqual([1]);

    for (const visibleDevices of ['', '-1']) {
      const none = await new GpuStatusReader({ runner: scriptedRunner(L4S), visibleDevices }).read();
      expect(none).toEqual({ available: false, device: 'cpu', gpus: [], readAt: expect.any(String) });
    }
  });
});
