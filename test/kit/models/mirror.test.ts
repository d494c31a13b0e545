import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { main } from '../../../services/kit/src/models/cli.js';
import {
  ModelFetchError,
  ModelMirrorError,
  defineManifest,
  ensureModel,
  mirrorUrl,
  modelMirror,
  type ModelEntry,
} from '../../../services/kit/src/models/index.js';
import { readRecord } from '../../../services/kit/src/models/file-record.js';
import { makeTempDir, randomFile, removeDir, startServer, type TestServer } from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

class Capture {
  text = '';
  readonly isTTY = false;
  write(s: string): boolean {
    this.text += s;
    return true;
  }
}

describe('MODEL_MIRROR', () => {
  it('takes an http(s) base URL, trailing slashes dropped; empty or unset is no mirror', () => {
    expect(modelMirror({ MODEL_MIRROR: 'http://10.0.0.5:8080' })).toBe('http://10.0.0.5:8080');
    expect(modelMirror({ MODEL_MIRROR: 'https://Models.Example/base//' })).toBe(
      'https://models.example/base',
    );
    expect(modelMirror({ MODEL_MIRROR: '' })).toBeUndefined();
    expect(modelMirror({})).toBeUndefined();
    expect(mirrorUrl('http://m/base', { file: 'tts/en US#1.onnx' })).toBe(
      'http://m/base/tts/en%20US%231.onnx',
    );
  });

  it('refuses anything else with a message naming the variable', () => {
    const refused = (value: string): string => {
      try {
        modelMirror({ MODEL_MIRROR: value });
      } catch (err) {
        expect(err).toBeInstanceOf(ModelMirrorError);
        return (err as Error).message;
      }
      throw new Error(`${value} was taken`);
    };
    expect(refused('ftp://10.0.0.5/models')).toBe(
      'invalid MODEL_MIRROR "ftp://10.0.0.5/models": the scheme is ftp; expected the http:// or https:// ' +
        'base URL of a models directory, e.g. http://10.0.0.5:8080',
    );
    expect(refused('10.0.0.5:8080')).toMatch(/^invalid MODEL_MIRROR "10\.0\.0\.5:8080": not a URL;/);
    expect(refused('models.example/llm')).toMatch(/^invalid MODEL_MIRROR "models\.example\/llm": not a URL;/);
    expect(refused('http://m/models?x=1')).toMatch(/: a base URL takes no query or fragment;/);
    const withPassword = refused('http://user:s3cret@m/models');
    expect(withPassword).toMatch(/^invalid MODEL_MIRROR: the URL holds credentials/);
    expect(withPassword).not.toContain('s3cret');
  });

  it('strips a long run of trailing slashes in linear time', () => {
    const started = performance.now();
    expect(modelMirror({ MODEL_MIRROR: `http://h/x${'/'.repeat(30_000)}` })).toBe('http://h/x');
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('ensureModel with a model mirror', () => {
  const file = randomFile(256 * 1024);
  const wrong = randomFile(4096);
  let modelsDir: string;
  let mirror: TestServer;
  let upstream: TestServer;

  beforeEach(async () => {
    modelsDir = await makeTempDir();
    upstream = await startServer({
      '/tiny.gguf': { body: file },
      '/down.gguf': { status: 503 },
      '/gone.gguf': { status: 404 },
    });
  });
  afterEach(async () => {
    await mirror.close();
    await upstream.close();
    await removeDir(modelsDir);
  });

  const entry = (sources: ModelEntry['sources'], extra: Partial<ModelEntry> = {}): ModelEntry =>
    defineManifest([
      {
        id: 'tiny',
        description: 'a test model',
        file: 'llm/tiny model.gguf',
        license: 'MIT',
        sources,
        ...extra,
      },
    ])['tiny']!;
  const dest = (): string => join(modelsDir, 'llm/tiny model.gguf');
  /** Where the mirror serves the entry's file (its path under the models directory, encoded). */
  const AT = '/models/llm/tiny%20model.gguf';
  const options = (over: { log?: { info: Log; warn: Log } } = {}) => ({
    modelsDir,
    retryDelayMs: 5,
    retries: 1,
    env: { MODEL_MIRROR: `${mirror.url}/models/` },
    mirror: true,
    ...over,
  });
  type Log = (obj: Record<string, unknown>, msg: string) => void;

  it('fetches a catalogue model from <MODEL_MIRROR>/<file> without contacting its sources', async () => {
    mirror = await startServer({ [AT]: { body: file } });
    const result = await ensureModel(entry([`${upstream.url}/tiny.gguf`], { sha256: sha(file) }), options());
    expect(result).toMatchObject({
      path: dest(),
      downloaded: true,
      sha256: sha(file),
      source: `${mirror.url}${AT}`,
    });
    expect((await readFile(dest())).equals(file)).toBe(true);
    expect(mirror.requests.map((r) => [r.path, r.status])).toEqual([[AT, 200]]);
    expect(upstream.requests).toHaveLength(0);
    expect(await readRecord(dest())).toMatchObject({ sha256: sha(file), source: `${mirror.url}${AT}` });
  });

  it("falls back to the catalogue's sources when the mirror answers 404", async () => {
    mirror = await startServer({});
    const infos: string[] = [];
    const log = { info: (_: Record<string, unknown>, msg: string) => infos.push(msg), warn: () => undefined };
    const result = await ensureModel(
      entry([`${upstream.url}/tiny.gguf`], { sha256: sha(file) }),
      options({ log }),
    );
    expect(result.source).toBe(`${upstream.url}/tiny.gguf`);
    expect((await readFile(dest())).equals(file)).toBe(true);
    expect(mirror.requests.map((r) => [r.path, r.status])).toEqual([[AT, 404]]);
    expect(infos).toContain("the model mirror does not hold it; trying the model's sources");
  });

  it('rejects a mirror file with the wrong sha256, naming the mirror URL and both hashes', async () => {
    mirror = await startServer({ [AT]: { body: wrong } });
    const model = entry([`${upstream.url}/gone.gguf`], { sha256: sha(file) });
    const err = await ensureModel(model, options()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelFetchError);
    const e = err as ModelFetchError;
    expect(e.failures[0]).toEqual({
      source: `${mirror.url}${AT} (MODEL_MIRROR)`,
      reason: `sha256 mismatch: expected ${sha(file)}, got ${sha(wrong)} (${wrong.length} bytes); the download was discarded`,
    });
    expect(e.message).toContain(
      `(1) ${mirror.url}${AT} (MODEL_MIRROR): sha256 mismatch: expected ${sha(file)}`,
    );
    expect(e.message).toContain(`(2) ${upstream.url}/gone.gguf: 404 Not Found`);
    expect(existsSync(dest())).toBe(false);
    expect(existsSync(`${dest()}.partial`)).toBe(false);

    // With a working source, the right bytes come from it.
    const fixed = await ensureModel(entry([`${upstream.url}/tiny.gguf`], { sha256: sha(file) }), options());
    expect(fixed.source).toBe(`${upstream.url}/tiny.gguf`);
    expect((await readFile(dest())).equals(file)).toBe(true);
  });

  it('lists a failing mirror with the failing sources', async () => {
    mirror = await startServer({ [AT]: { status: 500 } });
    const model = entry([`${upstream.url}/down.gguf`, `${upstream.url}/gone.gguf`], { sha256: sha(file) });
    const err = await ensureModel(model, options()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelFetchError);
    expect((err as ModelFetchError).failures).toEqual([
      { source: `${mirror.url}${AT} (MODEL_MIRROR)`, reason: '500 Internal Server Error' },
      { source: `${upstream.url}/down.gguf`, reason: '503 Service Unavailable' },
      { source: `${upstream.url}/gone.gguf`, reason: '404 Not Found' },
    ]);
    expect((err as Error).message).toMatch(
      /^model "tiny" is not available: every source failed: \(1\) http:\/\/127\.0\.0\.1:\d+\/models\/llm\/tiny%20model\.gguf \(MODEL_MIRROR\): 500 Internal Server Error; \(2\) /,
    );
    // The mirror's 500 is retried like a source's 5xx (retries: 1).
    expect(mirror.requests.map((r) => r.status)).toEqual([500, 500]);
    expect(existsSync(dest())).toBe(false);
  });

  it('reports a mirror that refuses connections, then uses the sources', async () => {
    mirror = await startServer({});
    await mirror.close();
    const warnings: Record<string, unknown>[] = [];
    const log = { info: () => undefined, warn: (o: Record<string, unknown>) => warnings.push(o) };
    const result = await ensureModel(
      entry([`${upstream.url}/tiny.gguf`], { sha256: sha(file) }),
      options({ log }),
    );
    expect(result.source).toBe(`${upstream.url}/tiny.gguf`);
    expect(warnings.at(-1)).toMatchObject({ source: `${mirror.url}${AT}` });
    // (Under jest, fetch's error comes from another realm, so the cause's code is not shown.)
    expect(String(warnings.at(-1)?.['reason'])).toMatch(/^cannot connect: /);
  });

  it("takes a mirror file only when it matches a source's sha256, when only sources name one", async () => {
    const other = randomFile(2048);
    const model = entry([
      { uri: `${upstream.url}/gone.gguf`, sha256: sha(other) },
      { uri: `${upstream.url}/down.gguf`, sha256: sha(file) },
    ]);
    mirror = await startServer({ [AT]: { body: file } });
    expect((await ensureModel(model, options())).source).toBe(`${mirror.url}${AT}`);
    await removeDir(modelsDir);

    await mirror.close();
    mirror = await startServer({ [AT]: { body: wrong } });
    const err = await ensureModel(model, { ...options(), retries: 0 }).catch((e: unknown) => e);
    expect((err as ModelFetchError).failures[0]).toEqual({
      source: `${mirror.url}${AT} (MODEL_MIRROR)`,
      reason: `sha256 mismatch: expected one of ${sha(other)}, ${sha(file)}, got ${sha(wrong)} (${wrong.length} bytes); the download was discarded`,
    });
    expect(existsSync(dest())).toBe(false);
  });

  it('takes any mirror file when no sha256 is known, and records its sha256', async () => {
    mirror = await startServer({ [AT]: { body: wrong } });
    const result = await ensureModel(entry([`${upstream.url}/tiny.gguf`]), options());
    expect(result).toMatchObject({ source: `${mirror.url}${AT}`, sha256: sha(wrong) });
    expect(await readRecord(dest())).toMatchObject({ sha256: sha(wrong), sizeBytes: wrong.length });
    expect(upstream.requests).toHaveLength(0);
  });

  it('ignores MODEL_MIRROR without `mirror` (sources a user gave), and refuses a bad one with it', async () => {
    mirror = await startServer({ [AT]: { body: file } });
    const model = entry([`${upstream.url}/tiny.gguf`], { sha256: sha(file) });
    const result = await ensureModel(model, { ...options(), mirror: false });
    expect(result.source).toBe(`${upstream.url}/tiny.gguf`);
    expect(mirror.requests).toHaveLength(0);

    await removeDir(modelsDir);
    const bad = { ...options(), env: { MODEL_MIRROR: 'ftp://m/models' } };
    await expect(ensureModel(model, bad)).rejects.toThrow(/^invalid MODEL_MIRROR "ftp:\/\/m\/models"/);
    expect(upstream.requests).toHaveLength(1);
  });
});

describe('clinicalsuite-models fetch with MODEL_MIRROR', () => {
  const file = randomFile(64 * 1024);
  let dir: string;
  let mirror: TestServer;
  let upstream: TestServer;
  let stdout: Capture;
  let stderr: Capture;

  beforeEach(async () => {
    dir = await makeTempDir();
    mirror = await startServer({ '/llm/tiny.gguf': { body: file } });
    upstream = await startServer({ '/tiny.gguf': { body: file } });
    stdout = new Capture();
    stderr = new Capture();
  });
  afterEach(async () => {
    await mirror.close();
    await upstream.close();
    await removeDir(dir);
  });

  const run = (env: Record<string, string>, ...argv: string[]): Promise<number> =>
    main(argv, {
      stdout,
      stderr,
      env,
      manifest: defineManifest([
        {
          id: 'tiny',
          description: 'a test model',
          file: 'llm/tiny.gguf',
          sha256: sha(file),
          license: 'MIT',
          sources: [`${upstream.url}/tiny.gguf`],
        },
      ]),
    });

  it("fetches a catalogue id from the mirror at the manifest's path, whatever --dest says", async () => {
    const dest = join(dir, 'volume', 'llm', 'renamed.gguf');
    expect(
      await run({ MODEL_MIRROR: mirror.url }, 'fetch', 'tiny', '--dest', dest, '--models-dir', dir),
    ).toBe(0);
    expect(stdout.text).toBe(`${dest}\n`);
    expect((await readFile(dest)).equals(file)).toBe(true);
    expect(mirror.requests.map((r) => r.path)).toEqual(['/llm/tiny.gguf']);
    expect(upstream.requests).toHaveLength(0);
  });

  it('leaves an explicit source URI alone', async () => {
    const env = { MODEL_MIRROR: mirror.url };
    expect(await run(env, 'fetch', `${upstream.url}/tiny.gguf`, '--models-dir', dir)).toBe(0);
    expect((await readFile(join(dir, 'tiny.gguf'))).equals(file)).toBe(true);
    expect(mirror.requests).toHaveLength(0);
    expect(upstream.requests.map((r) => r.path)).toEqual(['/tiny.gguf']);
  });

  it('exits 1 naming MODEL_MIRROR when it is not an http(s) URL', async () => {
    expect(await run({ MODEL_MIRROR: 'mirror.local:8080' }, 'fetch', 'tiny', '--models-dir', dir)).toBe(1);
    expect(stderr.text).toBe(
      'error: invalid MODEL_MIRROR "mirror.local:8080": the scheme is mirror.local; expected the http:// or ' +
        'https:// base URL of a models directory, e.g. http://10.0.0.5:8080\n',
    );
    expect(mirror.requests).toHaveLength(0);
    expect(upstream.requests).toHaveLength(0);
    expect(existsSync(join(dir, 'llm', 'tiny.gguf'))).toBe(false);
  });
});
