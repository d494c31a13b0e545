import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '@clinicalsuite/kit';
import { BackendPidFile } from '../../services/medllm/src/adapters/backend-process.js';
import { freePort } from '../kit/helpers.js';
import { writeFakeLlamaServer } from './fake-llama-server.js';

// A medllm front killed with SIGKILL must not leave its llama-server running (holding its port and
// GPU memory). The built service runs as a real process (`npm test` builds services/medllm/dist)
// with the fake llama-server (a real child process); the tests read the backend's pid from the
// service's pid file and watch /proc.

const MAIN = new URL('../../services/medllm/dist/main.js', import.meta.url).pathname;

/** Whether `pid` runs (a zombie has exited: its parent, maybe init, has not reaped it yet). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function until(what: string, check: () => boolean, ms: number): Promise<number> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
  return Date.now() - start;
}

let dir: string;
let binary: string;
const fronts: ChildProcess[] = [];
const backends: number[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'medllm-orphan-'));
  binary = writeFakeLlamaServer(dir);
  writeFileSync(join(dir, 'model.gguf'), 'fake');
  writeFileSync(join(dir, 'mmproj.gguf'), 'fake');
});
afterEach(() => {
  for (const front of fronts.splice(0)) front.kill('SIGKILL');
  for (const pid of backends.splice(0)) if (running(pid)) process.kill(pid, 'SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the service in `dataDir`; resolves once /health is 200, with the backend's pid. */
async function startFront(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ front: ChildProcess; backend: number }> {
  const port = await freePort();
  const front = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      LLAMA_SERVER_PATH: binary,
      MODEL_PATH: join(dir, 'model.gguf'),
      MMPROJ_PATH: join(dir, 'mmproj.gguf'),
      THREADS: '1',
      GPU_LAYERS: '0',
      NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
      // What is tested here is the process, not its auth (test/security/auth.test.ts).
      AUTH_DISABLED: 'true',
      BACKEND_HEALTH_INTERVAL_MS: '200',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: 'ignore',
  });
  fronts.push(front);
  let healthy = false;
  for (let i = 0; i < 300 && !healthy; i++) {
    healthy = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (!healthy) await sleep(50);
  }
  if (!healthy) throw new Error('medllm did not become healthy');
  const record = JSON.parse(readFileSync(join(dataDir, 'llama-server.pid'), 'utf8')) as {
    backend: { pid: number };
    front: { pid: number };
  };
  expect(record.front.pid).toBe(front.pid);
  backends.push(record.backend.pid);
  expect(running(record.backend.pid)).toBe(true);
  return { front, backend: record.backend.pid };
}

async function sigkill(front: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => front.once('exit', resolve));
  front.kill('SIGKILL');
  await exited;
}

describe('medllm never leaves its llama-server behind', () => {
  it('a SIGKILLed front takes its backend with it (setpriv --pdeathsig KILL)', async () => {
    const { front, backend } = await startFront(join(dir, 'data-pdeathsig'));
    await sigkill(front);
    const ms = await until(
      'the backend to be gone after the front was SIGKILLed',
      () => !running(backend),
      2000,
    );
    expect(ms).toBeLessThan(2000);
  }, 30_000);

  it('without setpriv the backend outlives a SIGKILLed front, and the next front kills it first', async () => {
    const data = join(dir, 'data-plain');
    const first = await startFront(data, { SETPRIV_PATH: 'none' });
    await sigkill(first.front);
    // The orphan the setpriv launcher prevents: still running after the front is gone.
    await sleep(500);
    expect(running(first.backend)).toBe(true);
    const second = await startFront(data, { SETPRIV_PATH: 'none' });
    expect(running(first.backend)).toBe(false);
    expect(second.backend).not.toBe(first.backend);
    // A graceful stop stops its backend and clears the pid file.
    const exited = new Promise((resolve) => second.front.once('exit', resolve));
    second.front.kill('SIGTERM');
    await exited;
    await until('the backend to stop with its front', () => !running(second.backend), 6000);
    expect(() => readFileSync(join(data, 'llama-server.pid'))).toThrow(/ENOENT/);
  }, 60_000);
});

describe('BackendPidFile.reapStale kills only a backend that is really ours and orphaned', () => {
  const logger = createLogger({ service: 'medllm-test', level: 'silent' });
  const startTime = (pid: number) =>
    readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;
  const sleeper = (): number => {
    const child = spawn('/bin/sleep', ['30'], { stdio: 'ignore' });
    backends.push(child.pid!);
    return child.pid!;
  };
  const write = (path: string, record: object) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, JSON.stringify(record));
  };
  // A front that has exited: this pid with a start time no process has.
  const deadFront = { pid: 1, startTime: '0' };

  it('kills the recorded process when its front is gone', async () => {
    const pid = sleeper();
    await until('sleep to start', () => running(pid), 2000);
    const path = join(dir, 'reap', 'a.pid');
    write(path, { backend: { pid, startTime: startTime(pid) }, binary: '/bin/sleep', front: deadFront });
    expect(await new BackendPidFile(path, logger).reapStale('/bin/sleep')).toBe(pid);
    expect(running(pid)).toBe(false);
  });

  it('leaves a live front’s backend, a reused pid and another program alone', async () => {
    const pid = sleeper();
    const front = sleeper();
    await until('sleep to start', () => running(pid) && running(front), 2000);
    const path = join(dir, 'reap', 'b.pid');
    const backend = { pid, startTime: startTime(pid) };
    write(path, { backend, binary: '/bin/sleep', front: { pid: front, startTime: startTime(front) } });
    expect(await new BackendPidFile(path, logger).reapStale('/bin/sleep')).toBeNull();
    write(path, { backend: { pid, startTime: '1' }, binary: '/bin/sleep', front: deadFront });
    expect(await new BackendPidFile(path, logger).reapStale('/bin/sleep')).toBeNull();
    write(path, { backend, binary: '/bin/sleep', front: deadFront });
    expect(await new BackendPidFile(path, logger).reapStale('/opt/llama-server')).toBeNull();
    expect(running(pid)).toBe(true);
  });
});
