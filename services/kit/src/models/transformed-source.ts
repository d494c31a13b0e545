/**
 * A source whose file is not the model file itself but holds it (a manifest source's
 * `transform`): the whole file is read, the model's bytes taken out of it, and those served.
 * Small files only (the whole file is in memory), which is what such packaging allows anyway.
 */
import { discard, type ByteSource } from './byte-source.js';
import { SourceFetchError } from './errors.js';
import type { SourceTransform } from './manifest.js';
import { readPythonBytesLiteral } from './python-bytes-literal.js';

const CHUNK = 1 << 20;

export function transformedSource(inner: ByteSource, transform: SourceTransform, label: string): ByteSource {
  let decoded: Promise<Buffer> | undefined;
  return {
    async open(offset) {
      decoded ??= readAll(inner, label).then((file) => apply(file, transform, label));
      // A failed read may succeed on a retry: do not keep the failure.
      const data = await decoded.catch((err: unknown) => {
        decoded = undefined;
        throw err;
      });
      const start = offset <= data.length ? offset : 0;
      return { start, totalBytes: data.length, body: chunks(data.subarray(start)) };
    },
    async cleanup() {
      await inner.cleanup?.();
    },
  };
}

function apply(file: Buffer, transform: SourceTransform, label: string): Buffer {
  try {
    return readPythonBytesLiteral(file, transform.name);
  } catch (err) {
    throw new SourceFetchError(label, `cannot take the model out of the file: ${(err as Error).message}`, {
      retryable: false,
      cause: err,
    });
  }
}

async function readAll(source: ByteSource, label: string): Promise<Buffer> {
  const opened = await source.open(0);
  if (opened.start !== 0) {
    await discard(opened.body);
    throw new SourceFetchError(label, `opened at byte ${String(opened.start)} instead of 0`, {
      retryable: true,
    });
  }
  const parts: Uint8Array[] = [];
  for await (const chunk of opened.body) parts.push(chunk);
  return Buffer.concat(parts);
}

async function* chunks(data: Buffer): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < data.length; i += CHUNK) {
    yield data.subarray(i, i + CHUNK);
    await Promise.resolve();
  }
}
