/**
 * The `<file>.partial` a download is written to. `<file>.partial.source` names the source it came
 * from, so a retry resumes only the same source's bytes and never glues two files together.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { OpenedBody } from './byte-source.js';

export function partialPath(dest: string): string {
  return `${dest}.partial`;
}

function ownerPath(dest: string): string {
  return `${dest}.partial.source`;
}

/** Bytes already downloaded from `sourceKey`; a partial of another source is thrown away. */
export async function resumableBytes(dest: string, sourceKey: string): Promise<number> {
  const owner = await readFile(ownerPath(dest), 'utf8').catch(() => undefined);
  const size = await stat(partialPath(dest)).then(
    (s) => s.size,
    () => undefined,
  );
  if (size !== undefined && owner === sourceKey) return size;
  await discardPartial(dest);
  await writeFile(ownerPath(dest), sourceKey);
  return 0;
}

export async function discardPartial(dest: string): Promise<void> {
  await rm(partialPath(dest), { force: true });
  await rm(ownerPath(dest), { force: true });
}

/** After the rename the partial is gone; only its owner note is left to remove. */
export async function forgetPartialOwner(dest: string): Promise<void> {
  await rm(ownerPath(dest), { force: true });
}

export interface WriteResult {
  /** Size of the partial when the body ended. */
  readonly sizeBytes: number;
  /** sha256 of the whole partial (the resumed prefix included). */
  readonly sha256: string;
}

/**
 * Writes `opened.body` into the partial at `opened.start` (truncating anything after it), hashing
 * the kept prefix first and then every byte as it is written; fsyncs before returning. On error
 * the bytes written so far stay, ready to resume.
 */
export async function writePartial(
  dest: string,
  opened: OpenedBody,
  onBytes: (sizeBytes: number) => void,
): Promise<WriteResult> {
  const path = partialPath(dest);
  const hash = createHash('sha256');
  const file = await open(path, opened.start === 0 ? 'w' : 'r+');
  try {
    await file.truncate(opened.start);
    if (opened.start > 0) await hashPrefix(path, opened.start, hash);
    let position = opened.start;
    for await (const chunk of opened.body) {
      await writeAll(file, chunk, position);
      hash.update(chunk);
      position += chunk.length;
      onBytes(position);
    }
    await file.sync();
    return { sizeBytes: position, sha256: hash.digest('hex') };
  } finally {
    await file.close();
  }
}

async function writeAll(
  file: Awaited<ReturnType<typeof open>>,
  chunk: Uint8Array,
  position: number,
): Promise<void> {
  let written = 0;
  while (written < chunk.length) {
    const { bytesWritten } = await file.write(chunk, written, chunk.length - written, position + written);
    written += bytesWritten;
  }
}

async function hashPrefix(path: string, length: number, hash: Hash): Promise<void> {
  for await (const chunk of createReadStream(path, { end: length - 1 }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
  }
}
