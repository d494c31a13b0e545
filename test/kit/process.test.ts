import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import {
  childLimitFailure,
  DEFAULT_CHILD_LIMITS,
  lastLine,
  limitedCommand,
  MemoryWatch,
  ProcessError,
  ProcessRunner,
  runProcess,
} from '@clinicalsuite/kit';

// The engines' process runner on real processes: input on stdin, bounded stdout, stderr for logs,
// SIGKILL on deadline, abort, overflow and shutdown (to the process group when asked), memory and
// CPU limits set by the kernel (prlimit) and what a child that hits them becomes.

const alive = (pid: number | undefined): boolean => {
  try {
    execFileSync('kill', ['-0', String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
/**
 * Processes whose whole command line is `marker` (e.g. `sleep 33`). Machine-wide, because a killed
 * shell's child is reparented away from this process; the whole line must match, so an unrelated
 * `sleep 330` elsewhere on the machine is not counted.
 */
const running = (marker: string): number[] =>
  execFileSync('ps', ['-e', '-o', 'pid=,args='])
    .toString()
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && m[2]?.trim() === marker)
    .map((m) => Number(m[1]));
const failureOf = (p: Promise<unknown>): Promise<ProcessError> =>
  p.then(
    () => {
      throw new Error('expected a ProcessError');
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(ProcessError);
      return error as ProcessError;
    },
  );
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('ProcessRunner', () => {
  it('feeds stdin (Buffer or string) and returns stdout; env is added to the environment', async () => {
    const runner = new ProcessRunner();
    const out = await runner.output('wc', ['-c'], { input: Buffer.from('hồ sơ'), timeoutMs: 5000 });
    expect(out.toString().trim()).toBe(String(Buffer.byteLength('hồ sơ')));
    expect((await runner.output('cat', [], { input: 'bệnh nhân', timeoutMs: 5000 })).toString()).toBe(
      'bệnh nhân',
    );
    const env = await runner.output('sh', ['-c', 'printf %s "$KIT_TEST_VAR:$PATH"'], {
      timeoutMs: 5000,
      env: { KIT_TEST_VAR: 'set' },
    });
    expect(env.toString()).toBe(`set:${String(process.env['PATH'])}`);
    // No input: stdin is closed at once (cat ends).
    expect((await runner.output('cat', [], { timeoutMs: 5000 })).length).toBe(0);
  });

  it('run() resolves with any exit status; output() makes a non-zero one an `exit` error with stderr kept', async () => {
    const runner = new ProcessRunner();
    const script = 'echo out; echo secret-detail >&2; exit 3';
    const result = await runner.run('sh', ['-c', script], { timeoutMs: 5000 });
    expect([result.code, result.signal, result.stdout.toString()]).toEqual([3, null, 'out\n']);
    expect(result.stderr).toContain('secret-detail');
    const failure = await failureOf(runner.output('sh', ['-c', script], { timeoutMs: 5000 }));
    expect([failure.kind, failure.command, failure.exitCode]).toEqual(['exit', 'sh', 3]);
    expect(failure.message).toBe('sh exited with status 3');
    expect(failure.message).not.toContain('secret-detail');
    expect(failure.stderr).toContain('secret-detail');
  });

  it('keeps only the tail of a long stderr', async () => {
    const result = await new ProcessRunner().run(
      'sh',
      ['-c', 'i=0; while [ $i -lt 2000 ]; do echo "line $i" >&2; i=$((i+1)); done; echo last-line >&2'],
      { timeoutMs: 10_000 },
    );
    expect(result.stderr.length).toBeLessThanOrEqual(4000);
    expect(result.stderr.trim().endsWith('last-line')).toBe(true);
    expect(result.stderr).not.toContain('line 0\n');
  });

  it('a missing command is `not_found`', async () => {
    const failure = await failureOf(new ProcessRunner().run('/nonexistent/engine', [], { timeoutMs: 1000 }));
    expect(failure.kind).toBe('not_found');
    expect(failure.message).toBe('/nonexistent/engine is not installed (not found on PATH)');
  });

  it('kills the process on its deadline (`timeout`), at once', async () => {
    const runner = new ProcessRunner();
    const t0 = performance.now();
    const failure = await failureOf(runner.run('sleep', ['31'], { timeoutMs: 200 }));
    expect(failure.kind).toBe('timeout');
    expect(failure.message).toBe('sleep took longer than 200 ms');
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(running('sleep 31')).toEqual([]);
    expect(runner.running).toBe(0);
  });

  it('kills the process on abort (`aborted`, the reason as cause) and refuses to start when already aborted', async () => {
    const runner = new ProcessRunner();
    const controller = new AbortController();
    const pending = failureOf(runner.run('sleep', ['32'], { timeoutMs: 60_000, signal: controller.signal }));
    await sleep(100);
    const [pid] = running('sleep 32');
    expect(alive(pid)).toBe(true);
    expect(runner.running).toBe(1);
    const reason = new Error('client went away');
    controller.abort(reason);
    const failure = await pending;
    expect(failure.kind).toBe('aborted');
    expect(failure.cause).toBe(reason);
    expect(alive(pid)).toBe(false);
    expect(runner.running).toBe(0);

    const early = await failureOf(
      runner.run('sleep', ['33'], { timeoutMs: 1000, signal: controller.signal }),
    );
    expect([early.kind, early.cause]).toEqual(['aborted', reason]);
    expect(early.message).toBe('sleep was not started: the request was aborted');
    expect(running('sleep 33')).toEqual([]);
  });

  it('kills a process that writes more than maxOutputBytes (`output_too_large`)', async () => {
    const failure = await failureOf(
      new ProcessRunner().run('yes', ['kit-overflow-test'], { timeoutMs: 10_000, maxOutputBytes: 100_000 }),
    );
    expect(failure.kind).toBe('output_too_large');
    expect(failure.message).toBe('yes wrote more than 100000 bytes');
    await sleep(50);
    expect(running('yes kit-overflow-test')).toEqual([]);
  });

  it('killAll stops every child still running: run() resolves with the signal, output() fails `exit`', async () => {
    const runner = new ProcessRunner();
    const left = runner.run('sleep', ['34'], { timeoutMs: 60_000 });
    const other = failureOf(runner.output('sleep', ['34'], { timeoutMs: 60_000 }));
    await sleep(100);
    expect(runner.running).toBe(2);
    runner.killAll();
    const result = await left;
    expect([result.code, result.signal]).toEqual([null, 'SIGKILL']);
    const failure = await other;
    expect([failure.kind, failure.message]).toEqual(['exit', 'sleep was killed by SIGKILL']);
    expect(running('sleep 34')).toEqual([]);
    expect(runner.running).toBe(0);
  });

  it('with processGroup, a timeout kills the whole pipeline (grandchildren included)', async () => {
    // Without the group, the shell dies and its `sleep` lives on, holding stdout open.
    const t0 = performance.now();
    const failure = await failureOf(
      new ProcessRunner().run('sh', ['-c', 'sleep 35 | cat; echo never'], {
        timeoutMs: 300,
        processGroup: true,
      }),
    );
    expect(failure.kind).toBe('timeout');
    expect(performance.now() - t0).toBeLessThan(3000);
    await sleep(50);
    expect(running('sleep 35')).toEqual([]);
  });

  it('without processGroup, a killed shell whose child still holds its pipes does not hang the caller', async () => {
    const t0 = performance.now();
    const failure = await failureOf(
      new ProcessRunner().run('sh', ['-c', 'sleep 36 | cat; echo never'], { timeoutMs: 300 }),
    );
    expect(failure.kind).toBe('timeout');
    expect(performance.now() - t0).toBeLessThan(3000);
    // The orphaned `sleep` is what processGroup is for.
    for (const pid of running('sleep 36')) process.kill(pid, 'SIGKILL');
  });

  it("mapError turns each failure into the service's own error, with the run's options", async () => {
    const seen: string[] = [];
    const runner = new ProcessRunner({
      mapError: (error, options) => {
        seen.push(error.kind);
        return new Error(`mapped ${error.kind} after ${String(options.timeoutMs)} ms`);
      },
    });
    await expect(runner.output('false', [], { timeoutMs: 5000 })).rejects.toThrow(
      'mapped exit after 5000 ms',
    );
    await expect(runner.run('sleep', ['37'], { timeoutMs: 100 })).rejects.toThrow(
      'mapped timeout after 100 ms',
    );
    await expect(runner.run('/nonexistent/engine', [], { timeoutMs: 100 })).rejects.toThrow(
      'mapped not_found',
    );
    expect(seen).toEqual(['exit', 'timeout', 'not_found']);
  });

  it('supervises a child started ahead (a warm process): input, output, and its group killed on timeout', async () => {
    const runner = new ProcessRunner();
    const warm = spawn('sh', ['-c', 'read line; echo "got $line"'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const result = await runner.supervise(warm, 'warm-sh', { input: 'ready\n', timeoutMs: 5000 });
    expect([result.code, result.stdout.toString()]).toEqual([0, 'got ready\n']);

    const stuck = spawn('sh', ['-c', 'sleep 38 | cat'], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const failure = await failureOf(
      runner.supervise(stuck, 'stuck-sh', { timeoutMs: 200, processGroup: true }),
    );
    expect([failure.kind, failure.message]).toEqual(['timeout', 'stuck-sh took longer than 200 ms']);
    await sleep(50);
    expect(running('sleep 38')).toEqual([]);
  });

  it('lastLine is the last non-empty line of a stderr tail, cut to 300 characters', () => {
    expect(lastLine('first\nsecond failure\n\n  \n')).toBe('second failure');
    expect(lastLine('')).toBe('');
    expect(lastLine('x'.repeat(400))).toHaveLength(300);
  });

  it('runProcess is output() on a runner of its own', async () => {
    expect((await runProcess('cat', [], { input: 'x', timeoutMs: 5000 })).toString()).toBe('x');
    expect((await failureOf(runProcess('false', [], { timeoutMs: 5000 }))).kind).toBe('exit');
  });

  it('every child runs under the runner limits (default 1 GiB, 120 s) or its own, set before it starts', async () => {
    // `ulimit -d` is in KiB, `ulimit -t` in seconds: what the child itself sees.
    const seen = async (runner: ProcessRunner, limits?: { memoryBytes: number; cpuSeconds: number }) =>
      (
        await runner.output('sh', ['-c', 'echo "$(ulimit -d) $(ulimit -t)"'], {
          timeoutMs: 5000,
          ...(limits === undefined ? {} : { limits }),
        })
      )
        .toString()
        .trim();
    expect(await seen(new ProcessRunner())).toBe(
      `${String(DEFAULT_CHILD_LIMITS.memoryBytes / 1024)} ${String(DEFAULT_CHILD_LIMITS.cpuSeconds)}`,
    );
    const runner = new ProcessRunner({ limits: { memoryBytes: 256 * 1024 ** 2, cpuSeconds: 30 } });
    expect(runner.limits).toEqual({ memoryBytes: 256 * 1024 ** 2, cpuSeconds: 30 });
    expect(await seen(runner)).toBe('262144 30');
    expect(await seen(runner, { memoryBytes: 64 * 1024 ** 2, cpuSeconds: 7 })).toBe('65536 7');
    // Inherited by what it starts (a shell pipeline, an engine's helpers).
    const child = await runner.output('sh', ['-c', 'sh -c "ulimit -d"'], { timeoutMs: 5000 });
    expect(child.toString().trim()).toBe('262144');
  });

  it('a child that runs out of its memory is `memory_limit`, even when it exits 0 with a partial result', async () => {
    const runner = new ProcessRunner({ limits: { memoryBytes: 128 * 1024 ** 2, cpuSeconds: 30 } });
    const allocate = 'x = bytearray(512 * 1024 * 1024)';
    const failed = await failureOf(runner.run('python3', ['-c', allocate], { timeoutMs: 10_000 }));
    expect([failed.kind, failed.command]).toEqual(['memory_limit', 'python3']);
    expect(failed.message).toBe('python3 ran out of memory (limit 128 MiB)');
    expect(failed.stderr).toContain('MemoryError');
    // Some engines (poppler, leptonica) report the failed allocation and still exit 0.
    const quiet = [
      'import sys',
      'try:',
      `    ${allocate}`,
      'except MemoryError:',
      '    print("Out of memory", file=sys.stderr)',
      '    for i in range(500): print("Error in pixGetWidth: pix not defined", file=sys.stderr)',
      'print("partial")',
    ].join('\n');
    const partial = await failureOf(runner.output('python3', ['-c', quiet], { timeoutMs: 10_000 }));
    expect([partial.kind, partial.exitCode]).toEqual(['memory_limit', 0]);
    // The same program within its limit.
    const roomy = { limits: { memoryBytes: 1024 ** 3, cpuSeconds: 30 }, timeoutMs: 10_000 };
    expect((await runner.output('python3', ['-c', quiet], roomy)).toString()).toBe('partial\n');
  });

  it('a child that uses its CPU time is killed by the kernel: `cpu_limit`, long before its deadline', async () => {
    const runner = new ProcessRunner({ limits: { memoryBytes: 256 * 1024 ** 2, cpuSeconds: 1 } });
    const t0 = performance.now();
    const failure = await failureOf(runner.run('sh', ['-c', 'while :; do :; done'], { timeoutMs: 60_000 }));
    expect([failure.kind, failure.message]).toEqual([
      'cpu_limit',
      'sh used its 1 s of CPU time and was stopped',
    ]);
    expect(performance.now() - t0).toBeLessThan(20_000);
    // A sleeping child uses no CPU: only its deadline stops it.
    const idle = await failureOf(runner.run('sleep', ['39'], { timeoutMs: 1500 }));
    expect(idle.kind).toBe('timeout');
  });

  it('limitedCommand is the prlimit line for children spawned elsewhere; prlimit execs the command', async () => {
    const line = limitedCommand('ffmpeg', ['-i', 'x'], { memoryBytes: 1024 ** 3, cpuSeconds: 60.2 });
    expect(line).toEqual({
      command: 'prlimit',
      args: ['--data=1073741824', '--cpu=61', '--', 'ffmpeg', '-i', 'x'],
    });
    const sh = limitedCommand('sh', ['-c', 'echo "$$ $(ulimit -d) $(ulimit -t)"'], {
      memoryBytes: 64 * 1024 ** 2,
      cpuSeconds: 5,
    });
    const child = spawn(sh.command, sh.args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await new Promise((resolve) => child.once('close', resolve));
    // Same pid: the shell is the process that was spawned, not a child of prlimit.
    expect(out.trim()).toBe(`${String(child.pid)} 65536 5`);
  });

  it('MemoryWatch and childLimitFailure read the end of a child spawned elsewhere (a stream)', () => {
    const watch = new MemoryWatch();
    watch.add('[h264 @ 0x1] get_buf');
    expect(watch.exhausted).toBe(false);
    watch.add('fer() failed\n');
    expect(watch.exhausted).toBe(true);
    const limits = { memoryBytes: 64 * 1024 ** 2, cpuSeconds: 2 };
    const end = { code: 1, signal: null, killed: false, memoryExhausted: true, stderr: '', seconds: 1 };
    expect(childLimitFailure('ffmpeg', limits, end)?.kind).toBe('memory_limit');
    // Killed by whoever spawned it (an abort): not a limit.
    expect(childLimitFailure('ffmpeg', limits, { ...end, killed: true })).toBeUndefined();
    const kill = { ...end, code: null, signal: 'SIGKILL' as const, memoryExhausted: false };
    expect(childLimitFailure('ffmpeg', limits, { ...kill, seconds: 60 })?.kind).toBe('cpu_limit');
    // Too soon to have used 2 s of CPU on this machine's cores: another killer (the OOM killer).
    expect(childLimitFailure('ffmpeg', limits, { ...kill, seconds: 0.01 })).toBeUndefined();
    const missing = {
      ...end,
      code: 127,
      memoryExhausted: false,
      stderr: 'prlimit: failed to execute ffmpeg: No such file or directory',
    };
    expect(childLimitFailure('ffmpeg', limits, missing)).toMatchObject({
      kind: 'not_found',
      message: 'ffmpeg is not installed (not found on PATH)',
    });
    expect(childLimitFailure('ffmpeg', limits, { ...end, memoryExhausted: false })).toBeUndefined();
  });
});
