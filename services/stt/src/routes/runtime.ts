import type { ConcurrencyGate, Readiness } from '@clinicalsuite/kit';
import type { SttBackend } from '../adapters/backend.js';
import type { SttConfig } from '../config.js';
import type { BackendId, BackendStatus } from '../domain/types.js';
import type { SttMetrics } from '../metrics.js';

/** What the routes share. */
export interface SttRuntime {
  readonly config: SttConfig;
  readonly backends: ReadonlyMap<BackendId, SttBackend>;
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly metrics: SttMetrics;
  readonly stats: ProcessingStats;
  readonly startedAt: number;
  readonly version: string;
}

export function backendStatuses(rt: Pick<SttRuntime, 'backends'>): BackendStatus[] {
  return [...rt.backends.values()].map((b) => b.status());
}

/** Mean processing time of the transcriptions answered (for /status). */
export class ProcessingStats {
  count = 0;
  private totalMs = 0;

  record(ms: number): void {
    this.count++;
    this.totalMs += ms;
  }

  get averageMs(): number {
    return this.count === 0 ? 0 : Math.round((this.totalMs / this.count) * 100) / 100;
  }
}
