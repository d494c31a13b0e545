import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fetchModel, SourceFetchError, type FetchProgress } from '../../../services/kit/src/models/index.js';
import { makeTempDir, randomFile, removeDir, startServer, type TestServer } from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const FAST = { retryDelayMs: 10 };

describe('fetchModel over HTTP', () => {
  let dir: string;
  let server: TestServer | undefined;
  const file = randomFile(3 * 1024 * 1024 + 123);

  beforeEach(async () => {
    dir = await makeTempDir();
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await removeDir(dir);
  });

  it('resumes an interrupted download with a Range from the partial size', async () => {
    server = await startServer({ '/m.bin': { body: file, cutFirstAfter: 1_000_000 } });
    const dest = join(dir, 'm.bin');

    const first = fetchModel(`${server.url}/m.bin`, dest, { retries: 0 });
    await expect(first).rejects.toThrow(/interrupted at \d+ bytes/);
    expect(existsSync(dest)).toBe(false);
    const partialSize = (await stat(`${dest}.partial`)).size;
    expect(partialSize).toBeGreaterThan(0);
    expect(partialSize).toBeLessThanOrEqual(1_000_000);

    const result = await fetchModel(`${server.url}/m.bin`, dest, { sha256: sha(file) });
    expect(server.requests.map((r) => r.headers.range)).toEqual([undefined, `bytes=${partialSize}-`]);
    expect(server.requests[1]!.status).toBe(206);
    expect(server.requests[1]!.sentBytes).toBe(file.length - partialSize);
    expect((await readFile(dest)).equals(file)).toBe(true);
    expect(result).toMatchObject({ downloaded: true, sizeBytes: file.length, sha256: sha(file) });
    expect(await readdir(dir)).toEqual(['m.bin', 'm.bin.sha256.json']);
  });

  it('retries within one call, resuming, and reports progress to completion', async () => {
    server = await startServer({ '/m.bin': { body: file, cutFirstAfter: 700_000 } });
    const dest = join(dir, 'm.bin');
    const events: FetchProgress[] = [];
    await fetchModel(`${server.url}/m.bin`, dest, { ...FAST, onProgress: (p) => events.push(p) });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.headers.range).toMatch(/^bytes=[1-9]\d*-$/);
    expect((await readFile(dest)).equals(file)).toBe(true);
    expect(events.at(-1)).toEqual({
      source: `${server.url}/m.bin`,
      receivedBytes: file.length,
      totalBytes: file.length,
      done: true,
    });
    expect(events.filter((e) => e.done)).toHaveLength(1);
    const received = events.map((e) => e.receivedBytes);
    expect(received).toEqual([...received].sort((a, b) => a - b));
  });

  it('restarts from zero when the server ignores the range (200)', async () => {
    server = await startServer({ '/m.bin': { body: file, cutFirstAfter: 500_000, ignoreRange: true } });
    const dest = join(dir, 'm.bin');
    await fetchModel(`${server.url}/m.bin`, dest, { ...FAST, sha256: sha(file) });
    expect(server.requests.map((r) => r.status)).toEqual([200, 200]);
    expect(server.requests[1]!.headers.range).toBeDefined();
    expect((await readFile(dest)).equals(file)).toBe(true);
  });

  it('takes a partial that is already whole (416 with the same size) without re-downloading', async () => {
    server = await startServer({ '/m.bin': { body: file } });
    const dest = join(dir, 'm.bin');
    await writeFile(`${dest}.partial`, file);
    await writeFile(`${dest}.partial.source`, `${server.url}/m.bin`);
    await fetchModel(`${server.url}/m.bin`, dest, { sha256: sha(file) });
    expect(server.requests.map((r) => [r.status, r.sentBytes])).toEqual([[416, 0]]);
    expect((await readFile(dest)).equals(file)).toBe(true);
  });

  it('does not resume a partial that another source wrote', async () => {
    server = await startServer({ '/m.bin': { body: file } });
    const dest = join(dir, 'm.bin');
    await writeFile(`${dest}.partial`, Buffer.alloc(1000, 7));
    await writeFile(`${dest}.partial.source`, 'https://elsewhere.example/other.bin');
    await fetchModel(`${server.url}/m.bin`, dest);
    expect(server.requests[0]!.headers.range).toBeUndefined();
    expect((await readFile(dest)).equals(file)).toBe(true);
  });

  it('rejects a sha256 mismatch and leaves neither a final file nor a partial', async () => {
    server = await startServer({ '/m.bin': { body: file } });
    const dest = join(dir, 'm.bin');
    const wrong = 'f'.repeat(64);
    const err = await fetchModel(`${server.url}/m.bin`, dest, { sha256: wrong }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceFetchError);
    expect((err as Error).message).toContain(`sha256 mismatch: expected ${wrong}, got ${sha(file)}`);
    expect(await readdir(dir)).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    [404, /404 Not Found/],
    [401, /401 Unauthorized/],
    [403, /403 Forbidden/],
  ])('fails at once on %i, naming the URI and status', async (status, message) => {
    server = await startServer({ '/m.bin': { status } });
    const uri = `${server.url}/m.bin`;
    const err = await fetchModel(uri, join(dir, 'm.bin'), FAST).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message.startsWith(`${uri}: ${status}`)).toBe(true);
    expect((err as SourceFetchError).httpStatus).toBe(status);
    expect(server.requests).toHaveLength(1);
    expect(await readdir(dir)).toEqual([]);
  });

  it('retries 5xx and 429, then succeeds', async () => {
    server = await startServer({
      '/a.bin': { body: file, status: 503, failTimes: 2 },
      '/b.bin': { body: file, status: 429, failTimes: 1 },
    });
    await fetchModel(`${server.url}/a.bin`, join(dir, 'a.bin'), FAST);
    await fetchModel(`${server.url}/b.bin`, join(dir, 'b.bin'), FAST);
    expect(server.requests.map((r) => `${r.path} ${r.status}`)).toEqual([
      '/a.bin 503',
      '/a.bin 503',
      '/a.bin 200',
      '/b.bin 429',
      '/b.bin 200',
    ]);
    expect((await readFile(join(dir, 'a.bin'))).equals(file)).toBe(true);
  });

  it('gives up after the configured retries with the last status', async () => {
    server = await startServer({ '/m.bin': { status: 500 } });
    const err = await fetchModel(`${server.url}/m.bin`, join(dir, 'm.bin'), { ...FAST, retries: 2 }).catch(
      (e: unknown) => e,
    );
    expect((err as Error).message).toMatch(/500 Internal Server Error$/);
    expect(server.requests).toHaveLength(3);
  });

  it('follows redirects', async () => {
    server = await startServer({ '/m.bin': { redirectTo: '/cdn/m.bin' }, '/cdn/m.bin': { body: file } });
    await fetchModel(`${server.url}/m.bin`, join(dir, 'm.bin'));
    expect((await readFile(join(dir, 'm.bin'))).equals(file)).toBe(true);
  });

  it('maps hf:// to HF_ENDPOINT and sends the token from HF_TOKEN', async () => {
    server = await startServer({ '/acme/tiny-GGUF/resolve/v2/sub/tiny.gguf': { body: file } });
    const env = { HF_ENDPOINT: server.url, HF_TOKEN: 'hf_secret' };
    const dest = join(dir, 'tiny.gguf');
    await fetchModel('hf://acme/tiny-GGUF/sub/tiny.gguf@v2', dest, { env });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer hf_secret');
    expect((await readFile(dest)).equals(file)).toBe(true);
  });

  it('explains a 401 from the hub: no token set', async () => {
    server = await startServer({ '/acme/gated/resolve/main/m.gguf': { status: 401 } });
    const err = await fetchModel('hf://acme/gated/m.gguf', join(dir, 'm.gguf'), {
      env: { HF_ENDPOINT: server.url },
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe(
      'hf://acme/gated/m.gguf: 401 Unauthorized — set HF_TOKEN for gated repositories',
    );
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('copies file:// sources', async () => {
    const src = join(dir, 'source.bin');
    await writeFile(src, file);
    const dest = join(dir, 'out', 'copy.bin');
    const result = await fetchModel(pathToFileURL(src).href, dest, { sha256: sha(file) });
    expect((await readFile(dest)).equals(file)).toBe(true);
    expect(result.downloaded).toBe(true);
    const missing = pathToFileURL(join(dir, 'missing.bin')).href;
    const started = Date.now();
    const err = await fetchModel(missing, join(dir, 'x.bin')).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(new RegExp(`^${missing}: cannot read .*missing.bin: ENOENT`));
    expect(Date.now() - started).toBeLessThan(500); // not retried
  });
});
