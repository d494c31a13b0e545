import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { main, type CliIo } from '../../../services/kit/src/models/cli.js';
import { createProgressReporter, defineManifest } from '../../../services/kit/src/models/index.js';
import { makeTempDir, randomFile, removeDir, startServer, type TestServer } from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

class Capture {
  text = '';
  constructor(readonly isTTY = false) {}
  write(s: string): boolean {
    this.text += s;
    return true;
  }
}

describe('clinicalsuite-models CLI', () => {
  const file = randomFile(2 * 1024 * 1024);
  let dir: string;
  let server: TestServer;
  let stdout: Capture;
  let stderr: Capture;

  beforeEach(async () => {
    dir = await makeTempDir();
    server = await startServer({
      '/tiny.gguf': { body: file, chunkBytes: 128 * 1024 },
      '/gone.gguf': { status: 404 },
    });
    stdout = new Capture();
    stderr = new Capture();
  });
  afterEach(async () => {
    await server.close();
    await removeDir(dir);
  });

  const manifest = () =>
    defineManifest([
      {
        id: 'tiny',
        description: 'a test model',
        file: 'llm/tiny.gguf',
        sha256: sha(file),
        license: 'MIT',
        sources: [`${server.url}/gone.gguf`, `${server.url}/tiny.gguf`],
      },
    ]);
  const run = (...argv: string[]): Promise<number> => {
    const io: CliIo = {
      stdout,
      stderr,
      env: { CLINICALSUITE_HOME: join(dir, 'home') },
      manifest: manifest(),
    };
    return main(argv, io);
  };

  it('fetches a manifest model into the models dir, prints its path, logs plain progress lines', async () => {
    const modelsDir = join(dir, 'models');
    expect(await run('fetch', 'tiny', '--models-dir', modelsDir)).toBe(0);
    const path = join(modelsDir, 'llm/tiny.gguf');
    expect(stdout.text).toBe(`${path}\n`);
    expect((await readFile(path)).equals(file)).toBe(true);
    const lines = stderr.text.trimEnd().split('\n');
    expect(stderr.text).not.toContain('\r');
    expect(lines[0]).toMatch(/^warning: model source failed; trying the next .*404 Not Found/);
    const progress = lines.filter((l) => l.startsWith(`${server.url}/tiny.gguf: `));
    // The first line, one per 10% at most, and the final one.
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.length).toBeLessThanOrEqual(12);
    expect(progress.at(-1)).toMatch(/: done, 2\.1 MB in \d+\.\d s$/);
    // Each line is in a later tenth than the one before (the download takes well under 5 s).
    const deciles = progress.slice(0, -1).map((l) => Math.floor(Number(/: (\d+)% \(/.exec(l)![1]) / 10));
    expect(deciles).toEqual([...new Set(deciles)].sort((a, b) => a - b));
    expect(progress.at(-2)).toMatch(/: 100% \(2\.1\/2\.1 MB, [\d.]+ MB\/s\)$/);

    stdout.text = '';
    stderr.text = '';
    expect(await run('fetch', 'tiny', '--models-dir', modelsDir)).toBe(0);
    expect(stderr.text).toBe(`already present: ${path}\n`);
  });

  it('fetches a raw URI under the models dir by file name, or to --dest', async () => {
    const modelsDir = join(dir, 'models');
    expect(await run('fetch', `${server.url}/tiny.gguf`, '--models-dir', modelsDir)).toBe(0);
    expect(stdout.text).toBe(`${join(modelsDir, 'tiny.gguf')}\n`);
    const dest = join(dir, 'elsewhere', 'x.gguf');
    expect(
      await run('fetch', `${server.url}/tiny.gguf`, '--dest', dest, '--sha256', sha(file).toUpperCase()),
    ).toBe(0);
    expect((await readFile(dest)).equals(file)).toBe(true);
  });

  it('defaults the models dir to $CLINICALSUITE_HOME/models', async () => {
    expect(await run('path', 'tiny')).toBe(0);
    expect(stdout.text).toBe(`${join(dir, 'home', 'models', 'llm', 'tiny.gguf')}\n`);
  });

  it('exits 1 with one line naming the cause', async () => {
    expect(await run('fetch', `${server.url}/gone.gguf`, '--models-dir', dir)).toBe(1);
    expect(stderr.text).toBe(`error: ${server.url}/gone.gguf: 404 Not Found\n`);

    stderr.text = '';
    expect(
      await run('fetch', `${server.url}/tiny.gguf`, '--dest', join(dir, 'x'), '--sha256', '0'.repeat(64)),
    ).toBe(1);
    expect(stderr.text.split('\n').filter((l) => l.startsWith('error: '))).toEqual([
      `error: ${server.url}/tiny.gguf: sha256 mismatch: expected ${'0'.repeat(64)}, got ${sha(file)} (${file.length} bytes); the download was discarded`,
    ]);
    expect(stderr.text).not.toMatch(/\n\s+at /);

    stderr.text = '';
    expect(await run('verify', 'nope')).toBe(1);
    expect(stderr.text).toBe('error: unknown model "nope"; known: tiny (or give a source URI)\n');

    stderr.text = '';
    expect(await run('fetch', 'ftp://x/y')).toBe(1);
    expect(stderr.text).toMatch(/^error: invalid model source "ftp:\/\/x\/y": expected https/);
  });

  it('exits 2 with the usage on usage errors', async () => {
    for (const argv of [
      [],
      ['bogus'],
      ['fetch'],
      ['fetch', 'a', 'b'],
      ['list', '--nope'],
      ['path', 'tiny', '--dest', 'x'],
    ]) {
      stderr.text = '';
      expect(await run(...argv)).toBe(2);
      expect(stderr.text).toMatch(/^error: .*\n\nusage: clinicalsuite-models/);
    }
    expect(await run('fetch', 'tiny', '--sha256', 'xyz')).toBe(2);
    expect(await run('--help')).toBe(0);
    expect(stdout.text).toMatch(/^usage: clinicalsuite-models/);
  });

  it('verifies a local file against the manifest, and lists what is present', async () => {
    const modelsDir = join(dir, 'models');
    expect(await run('verify', 'tiny', '--models-dir', modelsDir)).toBe(1);
    expect(stderr.text).toMatch(/^error: tiny is not present at .*; run: clinicalsuite-models fetch tiny\n$/);
    await run('fetch', 'tiny', '--models-dir', modelsDir);
    stdout.text = '';
    expect(await run('verify', 'tiny', '--models-dir', modelsDir)).toBe(0);
    expect(stdout.text).toBe(`${sha(file)}  ${join(modelsDir, 'llm/tiny.gguf')}\n`);
    expect(await run('list', '--models-dir', modelsDir)).toBe(0);
    expect(stdout.text).toMatch(/tiny\s+yes\s+2\.1 MB\s+\S+llm\/tiny\.gguf\n$/);

    await writeFile(join(modelsDir, 'llm/tiny.gguf'), 'corrupted');
    stderr.text = '';
    expect(await run('verify', 'tiny', '--models-dir', modelsDir)).toBe(1);
    expect(stderr.text).toMatch(/sha256 mismatch: expected [0-9a-f]{64}, got [0-9a-f]{64}\n$/);
  });
});

describe('progress reporter', () => {
  it('redraws one bar on a TTY and ends it with a newline', () => {
    const out = new Capture(true);
    let t = 0;
    const { onProgress } = createProgressReporter(out, { now: () => t });
    onProgress({ source: 'hf://o/r/m.gguf', receivedBytes: 0, totalBytes: 10_000_000, done: false });
    t = 50; // too soon to redraw
    onProgress({ source: 'hf://o/r/m.gguf', receivedBytes: 1_000_000, totalBytes: 10_000_000, done: false });
    t = 1000;
    onProgress({ source: 'hf://o/r/m.gguf', receivedBytes: 5_000_000, totalBytes: 10_000_000, done: false });
    t = 2000;
    onProgress({ source: 'hf://o/r/m.gguf', receivedBytes: 10_000_000, totalBytes: 10_000_000, done: true });
    const frames = out.text.split('\r').filter(Boolean);
    expect(frames).toHaveLength(3);
    expect(frames[1]).toBe('hf://o/r/m.gguf [############------------]  50% 5.0/10.0 MB  5.0 MB/s\x1b[K');
    expect(frames[2]).toBe(`hf://o/r/m.gguf [${'#'.repeat(24)}] 100% 10.0/10.0 MB  5.0 MB/s\x1b[K\n`);
  });

  it('writes plain lines at most every 5 s or 10% when not a TTY', () => {
    const out = new Capture(false);
    let t = 0;
    const { onProgress } = createProgressReporter(out, { now: () => t });
    for (let i = 0; i <= 100; i++) {
      t = i * 100;
      onProgress({ source: 's', receivedBytes: i * 1_000_000, totalBytes: 100_000_000, done: false });
    }
    const lines = out.text.trimEnd().split('\n');
    expect(lines).toHaveLength(11);
    expect(lines[5]).toBe('s: 50% (50.0/100.0 MB, 10.0 MB/s)');

    const slow = new Capture(false);
    const r = createProgressReporter(slow, { now: () => t });
    for (let i = 0; i < 30; i++) {
      t = i * 1000;
      r.onProgress({ source: 's', receivedBytes: i, done: false });
    }
    expect(slow.text.trimEnd().split('\n')).toEqual([
      's: (0.0 MB)',
      's: (0.0 MB, 0.0 MB/s)',
      expect.any(String),
      expect.any(String),
      expect.any(String),
      expect.any(String),
    ]);
  });
});
