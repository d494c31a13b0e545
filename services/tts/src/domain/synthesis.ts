import type { Language } from './language.js';
import { phonemeIds, phonemesOf, sentencePhonemes, type PhonemeIdMap } from './phoneme-ids.js';
import { piperLengthScale } from './speed.js';
import { clauseBreaks, splitSentences } from './text.js';
import { concatPcm, floatToInt16, type PcmAudio } from './wav.js';

/**
 * What a synthesis is made of, behind interfaces the adapters implement (espeak-ng, Piper on
 * onnxruntime): which engine speaks a request, and Piper's text -> sentences -> phonemes -> ids ->
 * audio pipeline.
 */

export type EngineName = 'espeak-ng' | 'piper';
export type EngineChoice = 'auto' | 'espeak' | 'piper';

export interface PiperScales {
  readonly noiseScale: number;
  readonly lengthScale: number;
  readonly noiseW: number;
}

export interface NeuralVoice {
  /** File name without `.onnx`, e.g. `en_US-lessac-medium`. */
  readonly id: string;
  readonly language: Language;
  readonly sampleRate: number;
  /** The espeak-ng voice that phonemizes for it (its config's espeak.voice). */
  readonly espeakVoice: string;
  readonly phonemeIdMap: PhonemeIdMap;
  readonly inference: {
    readonly noise_scale: number;
    readonly length_scale: number;
    readonly noise_w: number;
  };
  infer(ids: readonly number[], scales: PiperScales, signal: AbortSignal): Promise<Float32Array>;
}

export interface Phonemizer {
  /** espeak-ng IPA of one sentence, one entry per clause. */
  phonemize(sentence: string, voice: string, signal: AbortSignal): Promise<string[]>;
}

export type EngineDecision =
  | { readonly engine: 'piper'; readonly voice: NeuralVoice }
  | { readonly engine: 'espeak-ng' }
  | { readonly engine: 'unavailable'; readonly reason: string };

/**
 * `auto`: the language's Piper voice when there is one (and the service is not set to espeak
 * only), else espeak-ng; `espeak`: espeak-ng; `piper`: the Piper voice, or unavailable.
 */
export function chooseEngine(
  language: Language,
  requested: EngineChoice,
  voices: ReadonlyMap<Language, NeuralVoice>,
  espeakOnly: boolean,
): EngineDecision {
  const voice = voices.get(language);
  if (requested === 'espeak') return { engine: 'espeak-ng' };
  if (requested === 'piper') {
    if (voice !== undefined) return { engine: 'piper', voice };
    const installed = [...voices.keys()];
    return {
      engine: 'unavailable',
      reason:
        `no Piper voice is installed for "${language}" (installed: ${installed.length > 0 ? installed.join(', ') : 'none'}); ` +
        'mount one in the model volume or ask for engine "auto" or "espeak"',
    };
  }
  return voice !== undefined && !espeakOnly ? { engine: 'piper', voice } : { engine: 'espeak-ng' };
}

export interface PiperResult {
  readonly audio: PcmAudio;
  readonly sentences: number;
  /** Phonemes espeak-ng produced that the voice has no id for (skipped, as Piper does). */
  readonly missingPhonemes: readonly string[];
}

/** Piper's pipeline: each sentence phonemized, mapped to ids, spoken; sentences joined by silence. */
export async function synthesizeWithPiper(
  voice: NeuralVoice,
  phonemizer: Phonemizer,
  text: string,
  options: { readonly speed: number; readonly sentenceSilenceSeconds: number; readonly signal: AbortSignal },
): Promise<PiperResult> {
  const scales: PiperScales = {
    noiseScale: voice.inference.noise_scale,
    lengthScale: piperLengthScale(voice.inference.length_scale, options.speed),
    noiseW: voice.inference.noise_w,
  };
  const chunks: Int16Array[] = [];
  const missing = new Set<string>();
  const sentences = splitSentences(text);
  for (const sentence of sentences) {
    const clauses = await phonemizer.phonemize(sentence.text, voice.espeakVoice, options.signal);
    if (clauses.length === 0) continue;
    const ipa = sentencePhonemes(clauses, clauseBreaks(sentence.text), sentence.terminator);
    const { ids, missing: unknown } = phonemeIds(phonemesOf(ipa), voice.phonemeIdMap);
    for (const p of unknown) missing.add(p);
    const audio = await voice.infer(ids, scales, options.signal);
    chunks.push(floatToInt16(audio));
  }
  const gap = Math.round(options.sentenceSilenceSeconds * voice.sampleRate);
  return {
    audio: { samples: concatPcm(chunks, gap), sampleRate: voice.sampleRate },
    sentences: chunks.length,
    missingPhonemes: [...missing],
  };
}
