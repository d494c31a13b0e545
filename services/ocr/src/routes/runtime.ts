import type { ConcurrencyGate, ProcessRunner, Readiness, Resource } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { ReadyEngine } from '../adapters/open-engine.js';
import type { OcrConfig } from '../config.js';
import type { OcrMetrics } from '../metrics.js';

/** What the routes share. */

export interface OcrRuntime {
  readonly config: OcrConfig;
  /** tesseract once found and warmed up. */
  readonly engine: Resource<ReadyEngine>;
  readonly runner: ProcessRunner;
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly gpu: GpuStatusReader;
  readonly metrics: OcrMetrics;
  readonly stats: PageStats;
  readonly startedAt: number;
  readonly version: string;
}

/** Pages read and their mean time (for /status). */
export class PageStats {
  private count = 0;
  private totalMs = 0;

  record(pages: number, ms: number): void {
    this.count += pages;
    this.totalMs += ms;
  }

  get pages(): number {
    return this.count;
  }

  get averageMs(): number {
    return this.count === 0 ? 0 : Math.round((this.totalMs / this.count) * 10) / 10;
  }
}
