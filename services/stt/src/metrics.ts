import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { BackendStatus } from './domain/types.js';

/** The speech-to-text service's own metrics (`stt_` prefix, base units). */

export type Rejection =
  'too_large' | 'too_long' | 'not_audio' | 'empty' | 'language_unavailable' | 'not_ready';

export interface SttMetrics {
  /** Seconds per stage: `decode` (ffprobe + ffmpeg), `recognize` (the engine). */
  readonly stage: Histogram<'stage' | 'backend'>;
  readonly audioSeconds: Histogram<'backend'>;
  readonly transcriptions: Counter<'backend' | 'language'>;
  readonly rejections: Counter<'reason'>;
  readonly engineFailures: Counter<'backend'>;
  readonly pocketsphinxProcesses: Counter<'start'>;
}

export function createSttMetrics(
  kit: KitMetrics,
  sources: { backends: () => readonly BackendStatus[]; warmProcesses: () => number },
): SttMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}backend_ready`,
    help: 'Whether a recognition backend is ready (1) or not (0).',
    labelNames: ['backend'] as const,
    registers,
    collect() {
      for (const b of sources.backends()) this.set({ backend: b.id }, b.state === 'ready' ? 1 : 0);
    },
  });
  new Gauge({
    name: `${p}pocketsphinx_warm_processes`,
    help: 'pocketsphinx processes started ahead, model loaded (or loading), waiting for audio.',
    registers,
    collect() {
      this.set(sources.warmProcesses());
    },
  });
  const transcriptions = new Counter({
    name: `${p}transcriptions_total`,
    help: 'Transcriptions answered, by backend and language.',
    labelNames: ['backend', 'language'] as const,
    registers,
  });
  const rejections = new Counter({
    name: `${p}rejections_total`,
    help: 'Requests refused before recognition, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of ['too_large', 'too_long', 'not_audio', 'empty', 'language_unavailable', 'not_ready'])
    rejections.inc({ reason }, 0);
  const pocketsphinxProcesses = new Counter({
    name: `${p}pocketsphinx_processes_total`,
    help: 'pocketsphinx processes a request used: `warm` (started ahead, model loaded) or `cold` (started for it).',
    labelNames: ['start'] as const,
    registers,
  });
  pocketsphinxProcesses.inc({ start: 'warm' }, 0);
  pocketsphinxProcesses.inc({ start: 'cold' }, 0);
  return {
    stage: new Histogram({
      name: `${p}stage_duration_seconds`,
      help: 'Seconds per stage of one transcription: decode (ffprobe + ffmpeg to 16 kHz PCM), recognize.',
      labelNames: ['stage', 'backend'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    audioSeconds: new Histogram({
      name: `${p}audio_duration_seconds`,
      help: 'Length of the audio transcribed.',
      labelNames: ['backend'] as const,
      buckets: [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    }),
    transcriptions,
    rejections,
    engineFailures: new Counter({
      name: `${p}engine_failures_total`,
      help: 'Recognitions the engine failed (crashed, timed out).',
      labelNames: ['backend'] as const,
      registers,
    }),
    pocketsphinxProcesses,
  };
}
