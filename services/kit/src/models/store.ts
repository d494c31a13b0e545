/**
 * Fetching model files: one source into one destination (`fetchModel`), and a manifest entry
 * from the model mirror or the first of its sources that works (`ensureModel`). A destination
 * only ever holds a complete, verified file: bytes go to `<dest>.partial`, are fsynced and
 * checked, then renamed.
 */
import { mkdir, open, rename, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StalePartialError, type ByteSource } from './byte-source.js';
import { ModelFetchError, SourceFetchError, reasonOf, type SourceFailure } from './errors.js';
import { checkExisting, writeRecord } from './file-record.js';
import { describeNetworkError } from './http-download.js';
import { withDestinationLock } from './lock.js';
import type { ModelEntry, ModelSource } from './manifest.js';
import { MODEL_MIRROR_ENV, mirrorHashes, mirrorUrl, modelMirror } from './mirror.js';
import { discardPartial, forgetPartialOwner, partialPath, resumableBytes, writePartial } from './partial.js';
import { resolveModelPath } from './paths.js';
import type { ProgressCallback } from './progress.js';
import { createByteSource, describeSource, type DescribedSource } from './resolve-source.js';
import type { SourceEnv } from './sources.js';

/** The part of a pino logger the store uses. */
export interface ModelStoreLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
}

export interface FetchOptions {
  /**
   * Expected sha256 (lowercase hex), or several any of which will do; a mismatch discards the
   * download. A source's own sha256 comes first.
   */
  readonly sha256?: string | readonly string[] | undefined;
  readonly onProgress?: ProgressCallback | undefined;
  readonly log?: ModelStoreLogger | undefined;
  /**
   * Environment for `HF_TOKEN`, `HF_ENDPOINT`, `CLINICALSUITE_PYTHON`, pip, and `MODEL_MIRROR` for
   * {@link ensureModel} (default `process.env`).
   */
  readonly env?: SourceEnv | undefined;
  /** Retries after a transient failure (network, 5xx, 429), each resuming (default 4). */
  readonly retries?: number | undefined;
  /** First backoff delay, doubled per retry (default 1000 ms). */
  readonly retryDelayMs?: number | undefined;
  /** Size to show in progress when the source does not say (a manifest's `sizeBytes`). */
  readonly sizeHint?: number | undefined;
  /** Scratch space for wheels (default `<dest dir>/.cache`). */
  readonly workDir?: string | undefined;
  readonly lockWaitMs?: number | undefined;
  readonly lockStaleMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

export interface FetchResult {
  readonly path: string;
  readonly sizeBytes: number;
  /** Known when it was computed: always after a download, when expected, or when recorded. */
  readonly sha256: string | undefined;
  /** False when the file was already there. */
  readonly downloaded: boolean;
  /** The source that delivered it, when it was downloaded now. */
  readonly source: string | undefined;
}

const NO_LOG: ModelStoreLogger = { info: () => undefined, warn: () => undefined };

/** Fetches one source into `dest`, unless `dest` already holds the file (checked under the lock). */
export async function fetchModel(
  source: ModelSource,
  dest: string,
  options: FetchOptions = {},
): Promise<FetchResult> {
  const described = describeSource(source);
  const expected = expectedHashes(described.sha256 ?? options.sha256);
  const log = options.log ?? NO_LOG;
  await mkdir(dirname(dest), { recursive: true });
  const lockOptions = {
    waitMs: options.lockWaitMs,
    staleMs: options.lockStaleMs,
    onWait: () => log.info({ path: dest }, 'another fetcher is writing this file; waiting for it'),
  };
  return withDestinationLock(dest, lockOptions, async (assertHeld) => {
    const existing = await checkExisting(dest, expected);
    if (existing.state === 'present') return alreadyPresent(dest, existing);
    if (existing.state === 'mismatch') {
      log.warn(
        { path: dest, expected: describeHashes(expected), actual: existing.sha256 },
        'existing file has the wrong sha256; fetching again',
      );
    }
    const byteSource = createByteSource(described, sourceContext(dest, options));
    const written = await download(byteSource, described, dest, options).catch(async (err: unknown) => {
      // Leave a partial to resume from only when it holds something; wheels are not kept.
      if (!((await stat(partialPath(dest)).catch(() => undefined))?.size ?? 0)) await discardPartial(dest);
      await byteSource.cleanup?.().catch(() => undefined);
      throw err;
    });
    await byteSource.cleanup?.().catch(() => undefined);
    if (expected.length > 0 && !expected.includes(written.sha256)) {
      await discardPartial(dest);
      throw new SourceFetchError(
        described.label,
        `sha256 mismatch: expected ${describeHashes(expected)}, got ${written.sha256} (${written.sizeBytes} bytes); the download was discarded`,
        { retryable: false },
      );
    }
    assertHeld();
    await rename(partialPath(dest), dest);
    await forgetPartialOwner(dest);
    await syncDirectory(dirname(dest));
    await writeRecord(dest, written.sha256, described.label);
    options.onProgress?.({
      source: described.label,
      receivedBytes: written.sizeBytes,
      totalBytes: written.sizeBytes,
      done: true,
    });
    log.info({ path: dest, source: described.label, sizeBytes: written.sizeBytes }, 'model file fetched');
    return {
      path: dest,
      sizeBytes: written.sizeBytes,
      sha256: written.sha256,
      downloaded: true,
      source: described.label,
    };
  });
}

function expectedHashes(sha256: string | readonly string[] | undefined): readonly string[] {
  return typeof sha256 === 'string' ? [sha256] : (sha256 ?? []);
}

function describeHashes(hashes: readonly string[]): string {
  return hashes.length === 1 ? (hashes[0] ?? '') : `one of ${hashes.join(', ')}`;
}

async function download(
  byteSource: ByteSource,
  described: DescribedSource,
  dest: string,
  options: FetchOptions,
) {
  const retries = options.retries ?? 4;
  const log = options.log ?? NO_LOG;
  for (let attempt = 0; ; attempt++) {
    const offset = await resumableBytes(dest, described.key);
    let received = offset;
    try {
      const opened = await byteSource.open(offset);
      const totalBytes = opened.totalBytes ?? options.sizeHint;
      const written = await writePartial(dest, opened, (size) => {
        received = size;
        options.onProgress?.({
          source: described.label,
          receivedBytes: size,
          ...(totalBytes ? { totalBytes } : {}),
          done: false,
        });
      });
      if (opened.totalBytes !== undefined && written.sizeBytes !== opened.totalBytes) {
        throw new SourceFetchError(
          described.label,
          `got ${written.sizeBytes} of ${opened.totalBytes} bytes`,
          { retryable: true },
        );
      }
      return written;
    } catch (err) {
      if (err instanceof StalePartialError) await discardPartial(dest);
      const failure = asSourceError(described.label, err, received, options.signal);
      if (!failure.retryable || attempt >= retries) throw failure;
      const delayMs = (options.retryDelayMs ?? 1000) * 2 ** attempt;
      log.warn(
        { source: described.label, attempt: attempt + 1, delayMs, reason: failure.reason },
        'fetch failed; retrying',
      );
      await sleep(delayMs, undefined, options.signal ? { signal: options.signal } : {});
    }
  }
}

function asSourceError(
  label: string,
  err: unknown,
  received: number,
  signal?: AbortSignal,
): SourceFetchError {
  if (err instanceof SourceFetchError) return err;
  if (signal?.aborted) return new SourceFetchError(label, 'aborted', { retryable: false, cause: err });
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && ['ENOSPC', 'EDQUOT', 'EACCES', 'EPERM', 'EROFS'].includes(code)) {
    return new SourceFetchError(label, `cannot write the file: ${(err as Error).message}`, {
      retryable: false,
      cause: err,
    });
  }
  if (err instanceof StalePartialError)
    return new SourceFetchError(label, err.message, { retryable: true, cause: err });
  return new SourceFetchError(label, `interrupted at ${received} bytes: ${describeNetworkError(err)}`, {
    retryable: true,
    cause: err,
  });
}

function sourceContext(dest: string, options: FetchOptions) {
  return {
    env: options.env ?? process.env,
    workDir: options.workDir ?? join(dirname(dest), '.cache'),
    signal: options.signal,
  };
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r').catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close();
}

export interface EnsureOptions extends Omit<FetchOptions, 'sha256' | 'sizeHint'> {
  readonly modelsDir: string;
  /** Put the file here instead of `<modelsDir>/<entry.file>`. */
  readonly dest?: string | undefined;
  /**
   * Try `<MODEL_MIRROR>/<entry.file>` (`MODEL_MIRROR` from `env`) before the entry's sources: for
   * catalogue models, which a mirror holds at their paths under a models directory; not for
   * sources a user gave. Off by default.
   */
  readonly mirror?: boolean | undefined;
}

/**
 * Makes sure the entry's file is under the models directory: returns at once, without network,
 * when it is there (and matches the entry's sha256 when one is known); else tries the mirror (with
 * `mirror`), then each source in order, and throws a {@link ModelFetchError} listing every failure
 * when none works. A bad `MODEL_MIRROR` throws a `ModelMirrorError` (mirror.ts) before any I/O.
 */
export async function ensureModel(entry: ModelEntry, options: EnsureOptions): Promise<FetchResult> {
  const env = options.env ?? process.env;
  const mirror = options.mirror ? modelMirror(env) : undefined;
  const dest = options.dest ?? resolveModelPath(options.modelsDir, entry);
  const log = options.log ?? NO_LOG;
  const existing = await checkExisting(dest, entry.sha256);
  if (existing.state === 'present') return alreadyPresent(dest, existing);
  const fetchOptions = {
    ...options,
    env,
    sizeHint: entry.sizeBytes,
    workDir: options.workDir ?? join(options.modelsDir, '.cache'),
  };
  const failures: SourceFailure[] = [];
  if (mirror !== undefined) {
    const url = mirrorUrl(mirror, entry);
    try {
      return await fetchModel(url, dest, { ...fetchOptions, sha256: mirrorHashes(entry) });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      failures.push({ source: `${url} (${MODEL_MIRROR_ENV})`, reason: reasonOf(err) });
      if (err instanceof SourceFetchError && err.httpStatus === 404) {
        log.info(
          { model: entry.id, source: url },
          "the model mirror does not hold it; trying the model's sources",
        );
      } else {
        log.warn(
          { model: entry.id, source: url, reason: reasonOf(err) },
          "the model mirror failed; trying the model's sources",
        );
      }
    }
  }
  for (const source of entry.sources) {
    const { label } = describeSource(source);
    try {
      return await fetchModel(source, dest, { ...fetchOptions, sha256: entry.sha256 });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      failures.push({ source: label, reason: reasonOf(err) });
      log.warn(
        { model: entry.id, source: label, reason: reasonOf(err) },
        'model source failed; trying the next',
      );
    }
  }
  throw new ModelFetchError(entry.id, dest, failures, entry.sha256);
}

function alreadyPresent(
  path: string,
  existing: { sizeBytes: number; sha256: string | undefined },
): FetchResult {
  return {
    path,
    sizeBytes: existing.sizeBytes,
    sha256: existing.sha256,
    downloaded: false,
    source: undefined,
  };
}
