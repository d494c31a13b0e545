/**
 * What the store knows about a finished file: `<file>.sha256.json` holds its sha256 with the size
 * and mtime it had when hashed, so a later check skips re-hashing a multi-GB file that has not
 * changed. Any difference in size or mtime means hash again.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { z } from 'zod';

const fileRecordSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  sizeBytes: z.number().int().nonnegative(),
  mtimeMs: z.number(),
  source: z.string().optional(),
});

export type FileRecord = z.infer<typeof fileRecordSchema>;

export function recordPath(path: string): string {
  return `${path}.sha256.json`;
}

export async function readRecord(path: string): Promise<FileRecord | undefined> {
  try {
    return fileRecordSchema.parse(JSON.parse(await readFile(recordPath(path), 'utf8')));
  } catch {
    return undefined;
  }
}

/** Records the file's current size and mtime with its sha256 (written atomically). */
export async function writeRecord(path: string, sha256: string, source?: string): Promise<FileRecord> {
  const { size, mtimeMs } = await stat(path);
  const record: FileRecord = {
    sha256,
    sizeBytes: size,
    mtimeMs,
    ...(source === undefined ? {} : { source }),
  };
  const tmp = `${recordPath(path)}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
  await rename(tmp, recordPath(path));
  return record;
}

/** sha256 of a file's first `length` bytes (all of it when omitted), streamed. */
export async function hashFile(path: string, length?: number): Promise<string> {
  const hash = createHash('sha256');
  if (length === 0) return hash.digest('hex');
  const stream = createReadStream(path, length === undefined ? {} : { end: length - 1 });
  for await (const chunk of stream as AsyncIterable<Buffer>) hash.update(chunk);
  return hash.digest('hex');
}

export type ExistingFile =
  | { readonly state: 'missing' }
  | { readonly state: 'present'; readonly sizeBytes: number; readonly sha256: string | undefined }
  | { readonly state: 'mismatch'; readonly sizeBytes: number; readonly sha256: string };

/**
 * Whether `path` already holds the wanted file. Without an expected sha256 (undefined or an empty
 * list) any file is taken as it is; with one (or several, any of which will do), the record answers
 * when size and mtime still match, else the file is hashed.
 */
export async function checkExisting(
  path: string,
  expectedSha256?: string | readonly string[],
): Promise<ExistingFile> {
  let info;
  try {
    info = await stat(path);
  } catch {
    return { state: 'missing' };
  }
  const record = await readRecord(path);
  const fresh = record?.sizeBytes === info.size && record.mtimeMs === info.mtimeMs ? record : undefined;
  const wanted = typeof expectedSha256 === 'string' ? [expectedSha256] : (expectedSha256 ?? []);
  if (wanted.length === 0) return { state: 'present', sizeBytes: info.size, sha256: fresh?.sha256 };
  if (fresh !== undefined && wanted.includes(fresh.sha256))
    return { state: 'present', sizeBytes: info.size, sha256: fresh.sha256 };
  const actual = await hashFile(path);
  if (!wanted.includes(actual)) return { state: 'mismatch', sizeBytes: info.size, sha256: actual };
  await writeRecord(path, actual, record?.source);
  return { state: 'present', sizeBytes: info.size, sha256: actual };
}
