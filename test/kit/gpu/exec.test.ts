import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GpuStatusReader, NVIDIA_SMI_ARGS } from '@clinicalsuite/kit/gpu';
import { fixturePath } from './helpers.js';

// The real execFile path: fake nvidia-smi binaries as shell scripts in a temp dir.
let dir = '';
const script = (name: string, body: string, mode = 0o755): string => {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, mode);
  return path;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fake-nvidia-smi-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('GpuStatusReader through execFile', () => {
  it('runs the binary with the query arguments and parses what it prints', async () => {
    const argsFile = join(dir, 'args');
    const binary = script(
      'nvidia-smi-ok',
      `for arg in "$@"; do printf '%s\\n' "$arg" >> '${argsFile}'; done\ncat '${fixturePath('l4-x2.txt')}'`,
    );
    const status = await new GpuStatusReader({ binary }).read();

    expect(readFileSync(argsFile, 'utf8')).toBe(`${NVIDIA_SMI_ARGS.join('\n')}\n`);
    expect(status).toMatchObject({ available: true, device: 'cuda' });
    expect(status.gpus.map((gpu) => [gpu.index, gpu.memoryUsedMb, gpu.powerDrawWatts])).toEqual([
      [0, 15242, 48.71],
      [1, 0, 16.27],
    ]);
  });

  it('reports the driver error a failing nvidia-smi prints on stderr', async () => {
    const binary = script('nvidia-smi-no-driver', `cat '${fixturePath('driver-failure.txt')}' >&2\nexit 9`);
    const status = await new GpuStatusReader({ binary }).read();
    expect(status).toMatchObject({ available: false, device: 'cpu', gpus: [] });
    expect(status.error).toMatch(
      /^nvidia-smi exited with code 9: NVIDIA-SMI has failed because it couldn't communicate/,
    );
  });

  it('reports cpu without an error when the binary does not exist', async () => {
    const status = await new GpuStatusReader({ binary: join(dir, 'missing-nvidia-smi') }).read();
    expect(status).toEqual({ available: false, device: 'cpu', gpus: [], readAt: expect.any(String) });
  });

  it('kills a hanging nvidia-smi at the timeout', async () => {
    const binary = script('nvidia-smi-hang', 'exec sleep 30');
    const started = Date.now();
    const status = await new GpuStatusReader({ binary, timeoutMs: 200 }).read();
    expect(status).toMatchObject({ available: false, error: 'nvidia-smi timed out after 200 ms' });
    expect(Date.now() - started).toBeLessThan(1200);
  });

  it('reports a binary it may not execute', async () => {
    const binary = script('nvidia-smi-not-executable', 'exit 0', 0o644);
    expect((await new GpuStatusReader({ binary }).read()).error).toBe('nvidia-smi could not be run (EACCES)');
  });
});
