import { describe, it, expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { fetchModel } from '../../../services/kit/src/models/index.js';
import {
  REPO_ROOT,
  compileModelsCli,
  makeTempDir,
  randomFile,
  removeDir,
  startServer,
  type TestServer,
} from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runNode(args: string[], options: { cwd?: string } = {}): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: options.cwd ?? REPO_ROOT, env: { ...process.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('one fetcher per destination', () => {
  const file = randomFile(2 * 1024 * 1024);
  let dir: string;
  let cli: string;
  let server: TestServer | undefined;

  beforeAll(async () => {
    dir = await makeTempDir();
    cli = await compileModelsCli(join(dir, 'cli'));
  });
  afterAll(async () => {
    await removeDir(dir);
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('two calls in one process: the body is served once, both get the same file', async () => {
    server = await startServer({ '/m.bin': { body: file, chunkDelayMs: 15 } });
    const dest = join(dir, 'inproc', 'm.bin');
    const options = { sha256: sha(file), lockStaleMs: 5000 };
    const [a, b] = await Promise.all([
      fetchModel(`${server.url}/m.bin`, dest, options),
      fetchModel(`${server.url}/m.bin`, dest, options),
    ]);
    expect(server.bodyRequests('/m.bin')).toHaveLength(1);
    expect([a.downloaded, b.downloaded].sort()).toEqual([false, true]);
    expect(a.path).toBe(dest);
    expect(b.path).toBe(dest);
    expect((await readFile(dest)).equals(file)).toBe(true);
    expect(existsSync(`${dest}.lock`)).toBe(false);
  });

  it('two CLI processes: the body is served once, both exit 0 with the same path', async () => {
    server = await startServer({ '/m.bin': { body: file, chunkDelayMs: 40 } });
    const dest = join(dir, 'procs', 'm.bin');
    const args = [cli, 'fetch', `${server.url}/m.bin`, '--dest', dest, '--sha256', sha(file)];
    const [a, b] = await Promise.all([runNode(args), runNode(args)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.stdout).toBe(`${dest}\n`);
    expect(b.stdout).toBe(`${dest}\n`);
    expect(server.bodyRequests('/m.bin')).toHaveLength(1);
    expect([a.stderr, b.stderr].filter((s) => s.includes('already present'))).toHaveLength(1);
    expect((await readFile(dest)).equals(file)).toBe(true);
    expect((await readdir(join(dir, 'procs'))).sort()).toEqual(['m.bin', 'm.bin.sha256.json']);
  });

  it('takes over the lock of a process that died holding it', async () => {
    server = await startServer({ '/m.bin': { body: file } });
    const dest = join(dir, 'dead', 'm.bin');
    await mkdir(join(dir, 'dead'));
    // A process takes the lock the way the store does, then is killed without a chance to release it.
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import l from 'proper-lockfile'; await l.lock(${JSON.stringify(dest)}, { realpath: false, stale: 2000 });` +
          `process.stdout.write('locked'); setInterval(() => {}, 1000);`,
      ],
      { cwd: REPO_ROOT },
    );
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('close', resolve));
    expect(existsSync(`${dest}.lock`)).toBe(true);

    const started = Date.now();
    await fetchModel(`${server.url}/m.bin`, dest, { lockStaleMs: 2000, lockWaitMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(8000);
    expect((await readFile(dest)).equals(file)).toBe(true);
    expect(existsSync(`${dest}.lock`)).toBe(false);
  });

  it('recovers an old lock directory at once, and gives up on a live one after the wait', async () => {
    server = await startServer({ '/m.bin': { body: file } });
    const dest = join(dir, 'old', 'm.bin');
    await mkdir(`${dest}.lock`, { recursive: true });
    const old = new Date(Date.now() - 60_000);
    await utimes(`${dest}.lock`, old, old);
    await fetchModel(`${server.url}/m.bin`, dest, { lockStaleMs: 2000, lockWaitMs: 0 });
    expect((await readFile(dest)).equals(file)).toBe(true);

    const busy = join(dir, 'busy', 'm.bin');
    await mkdir(`${busy}.lock`, { recursive: true });
    const err = await fetchModel(`${server.url}/m.bin`, busy, { lockStaleMs: 10_000, lockWaitMs: 600 }).catch(
      (e: unknown) => e,
    );
    expect((err as Error).message).toMatch(/another fetcher still holds .*m\.bin\.lock/);
    expect(existsSync(busy)).toBe(false);
  });
});
