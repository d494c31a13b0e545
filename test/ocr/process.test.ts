import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import {
  GatewayTimeoutError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  ValidationError,
} from '@clinicalsuite/kit';
import { ProcessFailedError, ocrProcessRunner } from '../../services/ocr/src/adapters/process.js';

// The kit's process runner as OCR uses it, on real processes: its failures are OCR's HTTP errors
// (500 with stderr kept for the log, 504 on the deadline, the abort's reason, 503 when missing,
// 413 past the memory limit, 422 past the CPU limit).

const LIMITS = { memoryBytes: 256 * 1024 ** 2, cpuSeconds: 10 };

const alive = (pid: number | undefined): boolean => {
  try {
    execFileSync('kill', ['-0', String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const sleeping = (): number[] =>
  execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)])
    .toString()
    .split('\n')
    .filter((l) => l.includes('sleep 30'))
    .map((l) => Number(l.trim().split(/\s+/)[0]));

describe('ocrProcessRunner', () => {
  it('feeds stdin and returns stdout; a failure keeps stderr for the log, not the message', async () => {
    const runner = ocrProcessRunner(LIMITS);
    const out = await runner.output('wc', ['-c'], { input: Buffer.from('hồ sơ'), timeoutMs: 5000 });
    expect(out.toString().trim()).toBe(String(Buffer.byteLength('hồ sơ')));
    const failure: unknown = await runner
      .output('sh', ['-c', 'echo secret-detail >&2; exit 3'], { timeoutMs: 5000 })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ProcessFailedError);
    expect((failure as ProcessFailedError).message).toBe('sh failed (exit 3)');
    expect((failure as ProcessFailedError).stderr).toContain('secret-detail');
    await expect(runner.output('/nonexistent/engine', [], { timeoutMs: 1000 })).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
  });

  it('kills the process on its deadline (504), on abort and on killAll, at once', async () => {
    const runner = ocrProcessRunner(LIMITS);
    const t0 = performance.now();
    await expect(runner.run('sleep', ['30'], { timeoutMs: 200 })).rejects.toThrow(
      new GatewayTimeoutError('The OCR engine took longer than 200 ms on one page and was stopped'),
    );
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(sleeping()).toEqual([]);

    const controller = new AbortController();
    const aborted = runner.run('sleep', ['30'], { timeoutMs: 60_000, signal: controller.signal });
    await new Promise((r) => setTimeout(r, 100));
    const [pid] = sleeping();
    expect(alive(pid)).toBe(true);
    expect(runner.running).toBe(1);
    controller.abort(new Error('client went away'));
    await expect(aborted).rejects.toThrow('client went away');
    expect(alive(pid)).toBe(false);
    expect(runner.running).toBe(0);

    const left = runner.run('sleep', ['30'], { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 100));
    runner.killAll();
    const result = await left;
    expect(result.code).toBeNull();
    expect(sleeping()).toEqual([]);
  });

  it('413 past the memory limit, 422 past the CPU limit, each naming its setting', async () => {
    const runner = ocrProcessRunner({ memoryBytes: 64 * 1024 ** 2, cpuSeconds: 1 });
    const memory: unknown = await runner
      .output('python3', ['-c', 'x = bytearray(256 * 1024 * 1024)'], { timeoutMs: 10_000 })
      .catch((error: unknown) => error);
    expect(memory).toBeInstanceOf(PayloadTooLargeError);
    expect((memory as Error).message).toContain('(64 MiB, CHILD_MEMORY_LIMIT)');
    const cpu: unknown = await runner
      .output('sh', ['-c', 'while :; do :; done'], { timeoutMs: 30_000 })
      .catch((error: unknown) => error);
    expect(cpu).toBeInstanceOf(ValidationError);
    expect((cpu as ValidationError).status).toBe(422);
    expect((cpu as Error).message).toContain('more than 1 s of CPU time (CHILD_CPU_SECONDS)');
  });
});
