import { open } from 'node:fs/promises';
import {
  GGML_MAGIC,
  expectedTensorCount,
  ggmlTensorBytes,
  hparamsProblem,
  parseWhisperHparams,
  whisperLanguages,
  whisperModelSize,
  type WhisperHparams,
} from '../domain/whisper-model.js';
import type { Language } from '../domain/types.js';

/** What the service knows of a whisper.cpp model file after reading it through (never its weights). */
export interface WhisperModelInfo {
  readonly hparams: WhisperHparams;
  readonly languages: Language[];
  readonly size: string;
  readonly tensors: number;
  readonly bytes: number;
}

/** The file is not a usable whisper.cpp model; `message` says why, in words a user can act on. */
export class WhisperModelError extends Error {
  override readonly name = 'WhisperModelError';
}

const HEAD = 48;

/**
 * Reads a ggml Whisper model's header, mel filters and vocabulary, then walks every tensor's header
 * (skipping the data), so that a wrong file, a quantisation this check does not know aside, or a
 * truncated download is named before any engine loads it. whisper.cpp's own loader accepts a file
 * cut inside its last tensor without a word.
 */
export async function inspectWhisperModel(path: string): Promise<WhisperModelInfo> {
  const fh = await open(path, 'r').catch((error: unknown) => {
    const e = error as NodeJS.ErrnoException;
    throw new WhisperModelError(`cannot read the Whisper model at ${path} (${e.code ?? e.message})`);
  });
  try {
    const { size: bytes } = await fh.stat();
    const read = async (offset: number, length: number): Promise<Buffer> => {
      const b = Buffer.alloc(length);
      const { bytesRead } = await fh.read(b, 0, length, offset);
      if (bytesRead < length) {
        throw new WhisperModelError(
          `the Whisper model ${path} is truncated (${String(bytes)} bytes; it ends at byte ${String(offset + bytesRead)} ` +
            `where ${String(length)} more were expected): download it again`,
        );
      }
      return b;
    };
    const head = await read(0, Math.min(HEAD, Math.max(bytes, 4)));
    if (head.readUInt32LE(0) !== GGML_MAGIC) {
      throw new WhisperModelError(
        `${path} is not a whisper.cpp ggml model (bad magic): supply a ggml-*.bin file from whisper.cpp ` +
          '(ggml-base.bin, ggml-small.bin, ggml-large-v3-turbo.bin ...), not a PyTorch, ONNX or CTranslate2 file',
      );
    }
    if (head.length < HEAD) await read(0, HEAD);
    const hparams = parseWhisperHparams(head);
    const problem = hparamsProblem(hparams);
    if (problem !== null) throw new WhisperModelError(`${path} is not a Whisper model: ${problem}`);
    let offset = HEAD;
    const filters = await read(offset, 8);
    const nMel = filters.readInt32LE(0);
    const nFft = filters.readInt32LE(4);
    if (nMel <= 0 || nFft <= 0 || nMel * nFft > 1_000_000) {
      throw new WhisperModelError(`${path} is not a Whisper model: its mel filters are malformed`);
    }
    offset += 8 + nMel * nFft * 4;
    const nTokens = (await read(offset, 4)).readInt32LE(0);
    if (nTokens < 0 || nTokens > hparams.nVocab) {
      throw new WhisperModelError(`${path} is not a Whisper model: its vocabulary is malformed`);
    }
    offset += 4;
    // The vocabulary (~0.5 MB): read in one go, then walk its lengths.
    const vocabEnd = Math.min(bytes, offset + nTokens * 260);
    const vocab = await read(offset, vocabEnd - offset);
    let p = 0;
    for (let i = 0; i < nTokens; i++) {
      if (p + 4 > vocab.length) await read(offset + p, 4);
      p += 4 + vocab.readUInt32LE(p);
    }
    offset += p;
    if (offset > bytes) await read(offset, 1);
    const expected = expectedTensorCount(hparams);
    let tensors = 0;
    while (offset < bytes) {
      const th = await read(offset, 12);
      const nDims = th.readInt32LE(0);
      const nameLength = th.readInt32LE(4);
      const ttype = th.readInt32LE(8);
      if (nDims < 1 || nDims > 4 || nameLength <= 0 || nameLength > 256) {
        throw new WhisperModelError(
          `the Whisper model ${path} is corrupt (tensor ${String(tensors + 1)}'s header)`,
        );
      }
      const dims = await read(offset + 12, 4 * nDims + nameLength);
      let elements = 1;
      for (let d = 0; d < nDims; d++) elements *= dims.readInt32LE(4 * d);
      const data = ggmlTensorBytes(ttype, elements);
      if (data === null) {
        // A quantisation this check does not size: whisper.cpp's loader checks the rest.
        return {
          hparams,
          languages: whisperLanguages(hparams),
          size: whisperModelSize(hparams),
          tensors: expected,
          bytes,
        };
      }
      offset += 12 + 4 * nDims + nameLength;
      if (offset + data > bytes) {
        const name = dims.subarray(4 * nDims).toString('utf8');
        throw new WhisperModelError(
          `the Whisper model ${path} is truncated: tensor ${name} needs ${String(offset + data - bytes)} bytes past ` +
            `the end of the file (${String(bytes)} bytes): download it again`,
        );
      }
      offset += data;
      tensors += 1;
    }
    if (tensors !== expected) {
      throw new WhisperModelError(
        `the Whisper model ${path} holds ${String(tensors)} tensors where ${String(expected)} are expected: ` +
          'it is truncated or not a whisper.cpp model; download it again',
      );
    }
    return { hparams, languages: whisperLanguages(hparams), size: whisperModelSize(hparams), tensors, bytes };
  } finally {
    await fh.close();
  }
}
