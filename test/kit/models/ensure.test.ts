import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ModelFetchError,
  defineManifest,
  ensureModel,
  type ModelEntry,
} from '../../../services/kit/src/models/index.js';
import { readRecord, recordPath } from '../../../services/kit/src/models/file-record.js';
import { makeTempDir, randomFile, removeDir, startServer, type TestServer } from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('ensureModel', () => {
  const file = randomFile(1024 * 1024);
  let modelsDir: string;
  let server: TestServer;

  beforeEach(async () => {
    modelsDir = await makeTempDir();
    server = await startServer({
      '/good.gguf': { body: file },
      '/other.gguf': { body: randomFile(4096) },
      '/down.gguf': { status: 503 },
      '/gone.gguf': { status: 404 },
      '/owner/gated/resolve/main/m.gguf': { status: 401 },
    });
  });
  afterEach(async () => {
    await server.close();
    await removeDir(modelsDir);
  });

  const entry = (sources: ModelEntry['sources'], extra: Partial<ModelEntry> = {}): ModelEntry =>
    defineManifest([
      { id: 'tiny', description: 'a test model', file: 'llm/tiny.gguf', license: 'MIT', sources, ...extra },
    ])['tiny']!;

  const options = () => ({ modelsDir, retryDelayMs: 5, retries: 1, env: { HF_ENDPOINT: server.url } });

  it('falls back from failing sources to a working one', async () => {
    const warnings: string[] = [];
    const log = {
      info: () => undefined,
      warn: (o: Record<string, unknown>) => warnings.push(String(o['source'])),
    };
    const model = entry(['hf://owner/gated/m.gguf', `${server.url}/gone.gguf`, `${server.url}/good.gguf`], {
      sha256: sha(file),
    });
    const result = await ensureModel(model, { ...options(), log });
    expect(result).toMatchObject({
      path: join(modelsDir, 'llm/tiny.gguf'),
      downloaded: true,
      source: `${server.url}/good.gguf`,
    });
    expect((await readFile(result.path)).equals(file)).toBe(true);
    expect(warnings).toEqual(['hf://owner/gated/m.gguf', `${server.url}/gone.gguf`]);
  });

  it('lists every source with its reason, and where to put the file, when all fail', async () => {
    const model = entry(['hf://owner/gated/m.gguf', `${server.url}/down.gguf`, `${server.url}/gone.gguf`], {
      sha256: 'a'.repeat(64),
    });
    const err = await ensureModel(model, options()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelFetchError);
    const e = err as ModelFetchError;
    expect(e.failures).toEqual([
      { source: 'hf://owner/gated/m.gguf', reason: '401 Unauthorized — set HF_TOKEN for gated repositories' },
      { source: `${server.url}/down.gguf`, reason: '503 Service Unavailable' },
      { source: `${server.url}/gone.gguf`, reason: '404 Not Found' },
    ]);
    expect(e.message).not.toContain('\n');
    expect(e.message).toContain(`(2) ${server.url}/down.gguf: 503 Service Unavailable`);
    expect(e.message).toContain(
      `place it at ${join(modelsDir, 'llm/tiny.gguf')} with sha256 ${'a'.repeat(64)}`,
    );
    // 503 is retried (retries: 1); 401 and 404 are not.
    expect(server.requests.map((r) => r.status)).toEqual([401, 503, 503, 404]);
    expect(existsSync(join(modelsDir, 'llm/tiny.gguf'))).toBe(false);
  });

  it('skips a source whose bytes do not match the sha256 and uses the next', async () => {
    const model = entry([`${server.url}/other.gguf`, `${server.url}/good.gguf`], { sha256: sha(file) });
    const result = await ensureModel(model, options());
    expect(result.source).toBe(`${server.url}/good.gguf`);
    expect((await readFile(result.path)).equals(file)).toBe(true);
  });

  it('applies a per-source sha256 when the entry has none', async () => {
    const model = entry([
      { uri: `${server.url}/other.gguf`, sha256: sha(file) },
      { uri: `${server.url}/good.gguf`, sha256: sha(file) },
    ]);
    const result = await ensureModel(model, options());
    expect(result.source).toBe(`${server.url}/good.gguf`);
  });

  it('returns a present file without network, trusting the record while size and mtime hold', async () => {
    const model = entry([`${server.url}/good.gguf`], { sha256: sha(file) });
    await ensureModel(model, options());
    const requests = server.requests.length;
    const again = await ensureModel(model, options());
    expect(again).toMatchObject({ downloaded: false, sha256: sha(file) });
    expect(server.requests).toHaveLength(requests);

    // Same size and mtime but other bytes: the record is trusted (that is what it is for) …
    const path = join(modelsDir, 'llm/tiny.gguf');
    const record = (await readRecord(path))!;
    const tampered = Buffer.from(file);
    tampered[0] = tampered[0]! ^ 0xff;
    await writeFile(path, tampered);
    const { mtimeMs } = await stat(path);
    await writeFile(recordPath(path), JSON.stringify({ ...record, mtimeMs }));
    expect((await ensureModel(model, options())).downloaded).toBe(false);
    // … but a changed mtime makes it hash, find the mismatch and fetch a good copy.
    await utimes(path, new Date(), new Date(mtimeMs + 5000));
    const fixed = await ensureModel(model, options());
    expect(fixed.downloaded).toBe(true);
    expect((await readFile(path)).equals(file)).toBe(true);
  });

  it('takes a file the user placed, without network, when no sha256 is known', async () => {
    await mkdir(join(modelsDir, 'llm'));
    await writeFile(join(modelsDir, 'llm/tiny.gguf'), 'placed by hand');
    const result = await ensureModel(entry([`${server.url}/gone.gguf`]), options());
    expect(result).toMatchObject({ downloaded: false, sizeBytes: 14 });
    expect(server.requests).toHaveLength(0);
  });
});
