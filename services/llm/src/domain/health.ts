/** The spec's /health body; `now` comes from the caller (no clock in the domain). */

export const SERVICE_NAME = 'alpha2_service';
export const BACKEND = 'node-llama-cpp';

export interface HealthBody {
  readonly status: 'healthy' | 'unhealthy';
  readonly service: typeof SERVICE_NAME;
  readonly vllm_server: 'healthy' | 'loading' | 'unavailable';
  readonly model: string;
  readonly timestamp: string;
  readonly backend: typeof BACKEND;
  readonly reason?: string;
}

export function healthBody(input: {
  readonly ready: boolean;
  readonly reason: string | undefined;
  readonly model: string;
  readonly loading: boolean;
  readonly now: Date;
}): HealthBody {
  return {
    status: input.ready ? 'healthy' : 'unhealthy',
    service: SERVICE_NAME,
    vllm_server: input.ready ? 'healthy' : input.loading ? 'loading' : 'unavailable',
    model: input.model,
    timestamp: isoWithoutZone(input.now),
    backend: BACKEND,
    ...(input.ready || input.reason === undefined ? {} : { reason: input.reason }),
  };
}

/** `2025-03-01T08:15:30.123` (UTC, as Python's `datetime.utcnow().isoformat()` without micros). */
export function isoWithoutZone(date: Date): string {
  return date.toISOString().replace(/Z$/, '');
}

/** `1.23s`: the spec's `elapsed_time`. */
export function formatElapsed(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}
