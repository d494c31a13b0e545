import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Language } from './domain/language.js';

/** The text-to-speech service's own metrics (`tts_` prefix), in base units. */

export interface TtsMetrics {
  readonly syntheses: Counter<'engine' | 'language' | 'format'>;
  readonly failures: Counter<'engine' | 'reason'>;
  readonly synthesisSeconds: Histogram<'engine'>;
  readonly audioSeconds: Counter<'engine'>;
  readonly characters: Counter<'language'>;
  readonly encodeSeconds: Histogram<'format'>;
}

export function createTtsMetrics(kit: KitMetrics, voices: () => ReadonlyMap<Language, unknown>): TtsMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}piper_voices`,
    help: 'Piper neural voices loaded, by language (1 loaded, 0 spoken by espeak-ng).',
    labelNames: ['language'] as const,
    registers,
    collect() {
      const loaded = voices();
      for (const language of ['vi', 'en'] as const) this.set({ language }, loaded.has(language) ? 1 : 0);
    },
  });
  return {
    syntheses: new Counter({
      name: `${p}syntheses_total`,
      help: 'Texts spoken, by engine, language and audio format.',
      labelNames: ['engine', 'language', 'format'] as const,
      registers,
    }),
    failures: new Counter({
      name: `${p}synthesis_failures_total`,
      help: 'Syntheses that failed, by engine and reason (timeout, process, model, encoder).',
      labelNames: ['engine', 'reason'] as const,
      registers,
    }),
    synthesisSeconds: new Histogram({
      name: `${p}synthesis_duration_seconds`,
      help: 'Time to synthesize one text (engine work, before encoding), by engine.',
      labelNames: ['engine'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    audioSeconds: new Counter({
      name: `${p}audio_seconds_total`,
      help: 'Seconds of speech produced, by engine.',
      labelNames: ['engine'] as const,
      registers,
    }),
    characters: new Counter({
      name: `${p}characters_total`,
      help: 'Characters of text spoken, by language.',
      labelNames: ['language'] as const,
      registers,
    }),
    encodeSeconds: new Histogram({
      name: `${p}encode_duration_seconds`,
      help: 'Time to encode the audio into its format (WAV, MP3 with ffmpeg).',
      labelNames: ['format'] as const,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
  };
}
