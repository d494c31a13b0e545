/**
 * A byte source opens a file's content at an offset, so an interrupted download resumes. Each
 * source says where its body really starts (`start`): a source that cannot seek restarts at 0.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { SourceFetchError } from './errors.js';

export interface OpenedBody {
  /** Offset in the file of the body's first byte: the requested offset, or 0 on a restart. */
  readonly start: number;
  /** Size of the whole file, when the source knows it. */
  readonly totalBytes: number | undefined;
  readonly body: AsyncIterable<Uint8Array>;
}

export interface ByteSource {
  open(offset: number): Promise<OpenedBody>;
  /** Frees what the source keeps between attempts (downloaded wheels); called after success. */
  cleanup?(): Promise<void>;
}

/** The partial download does not fit the source (longer than the file): start again from zero. */
export class StalePartialError extends Error {
  override readonly name = 'StalePartialError';
}

export async function* emptyBody(): AsyncGenerator<Uint8Array> {
  // Nothing left to read.
}

/** Stops a body that will not be read, releasing its socket, file or zip. */
export async function discard(body: AsyncIterable<Uint8Array>): Promise<void> {
  await body[Symbol.asyncIterator]().return?.();
}

/** `file://`: a local copy, resumed by reading from the offset. */
export function fileSource(uri: string, path: string): ByteSource {
  return {
    async open(offset) {
      const { size } = await stat(path).catch((err: unknown) => {
        // A missing or unreadable local file does not come back on retry.
        throw new SourceFetchError(uri, `cannot read ${path}: ${(err as Error).message}`, {
          retryable: false,
          cause: err,
        });
      });
      const start = offset <= size ? offset : 0;
      return { start, totalBytes: size, body: createReadStream(path, { start }) };
    },
  };
}

/**
 * The concatenation of several sources, for a file shipped in parts (a model split across wheels
 * to stay under a registry's size limit). Resumes by skipping whole parts whose size is known.
 */
export function concatSources(parts: readonly ByteSource[]): ByteSource {
  return {
    open(offset) {
      return Promise.resolve({ start: offset, totalBytes: undefined, body: concatBody(parts, offset) });
    },
    async cleanup() {
      for (const part of parts) await part.cleanup?.();
    },
  };
}

async function* concatBody(parts: readonly ByteSource[], offset: number): AsyncGenerator<Uint8Array> {
  let skip = offset;
  for (const part of parts) {
    const opened = await part.open(skip);
    if (opened.totalBytes !== undefined && skip >= opened.totalBytes) {
      await discard(opened.body);
      skip -= opened.totalBytes;
      continue;
    }
    let drop = skip - opened.start;
    let length = opened.start;
    for await (const chunk of opened.body) {
      length += chunk.length;
      if (drop >= chunk.length) {
        drop -= chunk.length;
        continue;
      }
      yield drop > 0 ? chunk.subarray(drop) : chunk;
      drop = 0;
    }
    skip = Math.max(0, skip - length);
  }
  if (skip > 0)
    throw new StalePartialError(`the parts hold fewer bytes than the ${offset} already downloaded`);
}

/** The bytes of `body` with the first `drop` skipped: a source that cannot seek resumes this way. */
export async function* skipBytes(body: AsyncIterable<Uint8Array>, drop: number): AsyncGenerator<Uint8Array> {
  let left = drop;
  for await (const chunk of body) {
    if (left >= chunk.length) {
      left -= chunk.length;
      continue;
    }
    yield left > 0 ? chunk.subarray(left) : chunk;
    left = 0;
  }
}
