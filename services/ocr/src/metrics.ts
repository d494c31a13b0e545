import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Histogram } from 'prom-client';

/** The OCR service's own metrics (`ocr_` prefix): per-stage timings, pages, confidence, turns. */

export interface OcrMetrics {
  readonly stage: Histogram<'stage'>;
  readonly pages: Counter<'format'>;
  readonly confidence: Histogram;
  readonly rotations: Counter<'degrees'>;
  readonly deskewed: Counter;
}

export function createOcrMetrics(kit: KitMetrics): OcrMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  const pages = new Counter({
    name: `${p}pages_total`,
    help: 'Pages read, by the format they came in.',
    labelNames: ['format'] as const,
    registers,
  });
  for (const format of ['jpeg', 'png', 'webp', 'tiff', 'pdf']) pages.inc({ format }, 0);
  const rotations = new Counter({
    name: `${p}page_rotations_total`,
    help: 'Pages read after turning them (90, 180 or 270 degrees clockwise).',
    labelNames: ['degrees'] as const,
    registers,
  });
  for (const degrees of ['90', '180', '270']) rotations.inc({ degrees }, 0);
  return {
    stage: new Histogram({
      name: `${p}stage_duration_seconds`,
      help: 'Time per pipeline stage of one page: decode, render (PDF), deskew, orientation, recognize.',
      labelNames: ['stage'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    pages,
    confidence: new Histogram({
      name: `${p}page_mean_confidence_ratio`,
      help: "Mean word confidence of pages with text (0..1, tesseract's).",
      buckets: [0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1],
      registers,
    }),
    rotations,
    deskewed: new Counter({
      name: `${p}pages_deskewed_total`,
      help: 'Pages whose skew was measured and straightened before reading.',
      registers,
    }),
  };
}
