/**
 * The header of whisper.cpp's ggml model file, as `whisper_model_load` reads it: the magic
 * 0x67676d6c, then 11 int32 hyperparameters in the order below (then the mel filters, the
 * vocabulary and the tensors). The model store writes it (ct2-whisper.ts); the speech service reads
 * it to check a file before whisper.cpp loads it (services/stt/README.md, "Whisper").
 */

export const GGML_MAGIC = 0x67676d6c;

export interface WhisperHparams {
  readonly nVocab: number;
  readonly nAudioCtx: number;
  readonly nAudioState: number;
  readonly nAudioHead: number;
  readonly nAudioLayer: number;
  readonly nTextCtx: number;
  readonly nTextState: number;
  readonly nTextHead: number;
  readonly nTextLayer: number;
  readonly nMels: number;
  /** 0 every tensor f32, 1 f16 (whisper.cpp's ggml-*.bin), higher: quantised. */
  readonly ftype: number;
}

/** The hyperparameters in file order. */
const ORDER: readonly (keyof WhisperHparams)[] = [
  'nVocab',
  'nAudioCtx',
  'nAudioState',
  'nAudioHead',
  'nAudioLayer',
  'nTextCtx',
  'nTextState',
  'nTextHead',
  'nTextLayer',
  'nMels',
  'ftype',
];

/** Bytes the magic and the hyperparameters take. */
export const WHISPER_HEADER_BYTES = 4 + 4 * ORDER.length;

/** The hyperparameters from the file's first WHISPER_HEADER_BYTES bytes (the magic unchecked). */
export function parseWhisperHparams(b: Buffer): WhisperHparams {
  return Object.fromEntries(
    ORDER.map((key, i) => [key, b.readInt32LE(4 + 4 * i)]),
  ) as unknown as WhisperHparams;
}

/** The magic and the hyperparameters, as the file starts. */
export function encodeWhisperHeader(h: WhisperHparams): Buffer {
  const b = Buffer.alloc(WHISPER_HEADER_BYTES);
  b.writeUInt32LE(GGML_MAGIC, 0);
  ORDER.forEach((key, i) => b.writeInt32LE(h[key], 4 + 4 * i));
  return b;
}
