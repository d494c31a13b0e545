import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';

/** The face service's own metrics (`face_` prefix): per-stage timings, faces per image, registry size. */

export type Stage = 'decode' | 'detect' | 'align' | 'embed' | 'match';

export interface FaceMetrics {
  readonly stage: Histogram<'stage'>;
  readonly facesPerImage: Histogram;
  readonly recognitions: Counter<'result'>;
}

export function createFaceMetrics(
  kit: KitMetrics,
  sources: { persons: () => number; embeddings: () => number },
): FaceMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}registry_persons`,
    help: 'Persons registered (with embeddings of the loaded recognizer).',
    registers,
    collect() {
      this.set(sources.persons());
    },
  });
  new Gauge({
    name: `${p}registry_embeddings`,
    help: 'Face embeddings held in the in-memory index.',
    registers,
    collect() {
      this.set(sources.embeddings());
    },
  });
  const recognitions = new Counter({
    name: `${p}recognitions_total`,
    help: 'Faces matched against the registry, by result (recognized, unknown).',
    labelNames: ['result'] as const,
    registers,
  });
  for (const result of ['recognized', 'unknown']) recognitions.inc({ result }, 0);
  return {
    stage: new Histogram({
      name: `${p}inference_duration_seconds`,
      help: 'Time per pipeline stage of one image: decode, detect, align, embed (all faces), match.',
      labelNames: ['stage'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    facesPerImage: new Histogram({
      name: `${p}faces_per_image`,
      help: 'Faces detected in an image.',
      buckets: [0, 1, 2, 3, 5, 10, 20, 50],
      registers,
    }),
    recognitions,
  };
}
