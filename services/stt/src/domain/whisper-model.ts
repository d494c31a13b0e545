import type { Language } from './types.js';

// What a whisper.cpp model file's header says: the kit's model store writes the same header
// (services/kit/src/models/whisper-ggml-header.ts), so both sides share one definition.
import type { WhisperHparams } from '@clinicalsuite/kit/models';

export { GGML_MAGIC, parseWhisperHparams, type WhisperHparams } from '@clinicalsuite/kit/models';

/** Why these hyperparameters cannot be a Whisper model, or null. */
export function hparamsProblem(h: WhisperHparams): string | null {
  const positive = [
    h.nAudioCtx,
    h.nAudioState,
    h.nAudioHead,
    h.nAudioLayer,
    h.nTextCtx,
    h.nTextState,
    h.nTextHead,
  ];
  if (positive.some((v) => !(v > 0 && v < 1_000_000)) || !(h.nTextLayer > 0 && h.nTextLayer < 1000)) {
    return 'its hyperparameters are out of range';
  }
  if (h.nVocab < 51_864 || h.nVocab > 51_866)
    return `n_vocab ${String(h.nVocab)} is not a Whisper vocabulary`;
  if (h.nMels !== 80 && h.nMels !== 128) return `n_mels ${String(h.nMels)} is neither 80 nor 128`;
  if (h.nTextState !== h.nAudioState) return 'n_text_state differs from n_audio_state';
  return null;
}

/**
 * Languages the model transcribes for this service: a multilingual vocabulary (51865, or 51866 for
 * large-v3) knows Vietnamese; the English-only one (51864, the *.en models) must never serve `vi`.
 */
export function whisperLanguages(h: Pick<WhisperHparams, 'nVocab'>): Language[] {
  return h.nVocab >= 51_865 ? ['vi', 'en'] : ['en'];
}

/** Tensors whisper.cpp expects (encoder 7 + 15 per layer, decoder 4 + 24 per layer). */
export function expectedTensorCount(h: WhisperHparams): number {
  return 11 + 15 * h.nAudioLayer + 24 * h.nTextLayer;
}

/** Bytes of `elements` values of ggml type `ttype`, or null for a type this check does not know. */
export function ggmlTensorBytes(ttype: number, elements: number): number | null {
  // [bytes per block, values per block]: f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0.
  const sizes: Record<number, readonly [number, number]> = {
    0: [4, 1],
    1: [2, 1],
    2: [18, 32],
    3: [20, 32],
    6: [22, 32],
    7: [24, 32],
    8: [34, 32],
  };
  const s = sizes[ttype];
  if (s === undefined) return null;
  return (elements / s[1]) * s[0];
}

/** "base", "small", "large-v3" ... from the layer count (whisper.cpp's own naming). */
export function whisperModelSize(h: WhisperHparams): string {
  const names: Record<number, string> = { 4: 'tiny', 6: 'base', 12: 'small', 24: 'medium', 32: 'large' };
  const name = names[h.nAudioLayer] ?? `${String(h.nAudioLayer)}-layer`;
  if (h.nAudioLayer === 32 && h.nVocab === 51_866) return h.nTextLayer === 4 ? 'large-v3-turbo' : 'large-v3';
  return h.nVocab === 51_864 ? `${name}.en` : name;
}

/** A segment as whisper.cpp (through @fugood/whisper.node) reports it: times in milliseconds. */
export interface RawWhisperSegment {
  readonly text: string;
  readonly t0: number;
  readonly t1: number;
}

/**
 * Whisper's segments as the service answers them: seconds, inside the audio (whisper.cpp times the
 * last segment of a window up to the window's 30 s end, past the audio's own end), text trimmed,
 * empty ones dropped. whisper.cpp gives no per-segment probability here: confidence is null.
 */
export function whisperSegments(
  raw: readonly RawWhisperSegment[],
  durationSeconds: number,
): { start: number; end: number; text: string; confidence: null }[] {
  const clamp = (ms: number): number =>
    Math.round(Math.min(Math.max(Number.isFinite(ms) ? ms : 0, 0) / 1000, durationSeconds) * 1000) / 1000;
  return raw
    .map((s) => {
      const start = clamp(s.t0);
      return { start, end: Math.max(start, clamp(s.t1)), text: s.text.trim(), confidence: null };
    })
    .filter((s) => s.text !== '');
}
