import { Gauge } from 'prom-client';
import type { Logger } from '../logger.js';
import type { KitMetrics } from '../metrics.js';
import type { ReadinessSignal } from '../readiness.js';
import type { LlmClient, ProbeResult } from './client.js';

/**
 * Keeps a readiness condition in step with the LLM, where the LLM decides the service's readiness:
 * ready only while the LLM answers its health check and the model name is known; otherwise not
 * ready with the LLM's own reason ("unreachable (ECONNREFUSED)", "not ready: model file not
 * found…", "refused the token"). Probes every `intervalMs`, and at once when a turn found the LLM
 * unreachable.
 */

export type LlmState = 'unknown' | ProbeResult['state'];

export interface LlmStatus {
  readonly state: LlmState;
  readonly detail: string | null;
  /** The model name turns use (configured, or the LLM's first listed model). */
  readonly model: string | null;
  /** When the last probe ended (epoch ms), null before the first. */
  readonly checkedAt: number | null;
}

export interface LlmMonitorOptions {
  readonly client: LlmClient;
  /**
   * The condition it keeps in step (`kit.readiness.condition(reason)`); omitted where the LLM
   * does not decide the service's readiness.
   */
  readonly readiness?: ReadinessSignal;
  readonly logger: Logger;
  readonly intervalMs: number;
  readonly configuredModel: string | undefined;
  /** The env var that names the model, for the message when the LLM lists none. */
  readonly modelEnv: string;
  readonly now: () => number;
}

export class LlmMonitor {
  private current: LlmStatus;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<LlmStatus> | undefined;
  private readonly controller = new AbortController();
  private stopped = false;

  constructor(private readonly options: LlmMonitorOptions) {
    this.current = {
      state: 'unknown',
      detail: null,
      model: options.configuredModel ?? null,
      checkedAt: null,
    };
  }

  get status(): LlmStatus {
    return this.current;
  }

  start(): void {
    void this.check();
  }

  /** Probes now (joins a probe in flight) and schedules the next. */
  check(): Promise<LlmStatus> {
    if (this.stopped) return Promise.resolve(this.current);
    this.running ??= this.probe().finally(() => {
      this.running = undefined;
      this.schedule();
    });
    return this.running;
  }

  stop(): void {
    this.stopped = true;
    this.controller.abort();
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), this.options.intervalMs);
    this.timer.unref();
  }

  private async probe(): Promise<LlmStatus> {
    const { client, readiness, logger } = this.options;
    const signal = AbortSignal.any([
      this.controller.signal,
      AbortSignal.timeout(Math.max(this.options.intervalMs, 5000)),
    ]);
    const result = await client.probe(signal);
    // After SIGTERM the kit marks the service "shutting down"; a probe must not undo that.
    if (this.stopped || readiness?.reason === 'shutting down') return this.current;
    const previous = this.current.state;
    let model = this.options.configuredModel ?? null;
    let detail: string | null = null;
    if (result.state === 'up') {
      model ??= result.models[0] ?? null;
      if (model === null)
        detail = `the LLM at ${client.displayUrl} lists no model: set ${this.options.modelEnv}`;
    } else {
      detail = result.detail;
      model ??= this.current.model;
    }
    this.current = { state: result.state, detail, model, checkedAt: this.options.now() };
    if (result.state === 'up' && detail === null) readiness?.setReady();
    else readiness?.setNotReady(detail ?? 'the LLM is not available');
    if (previous !== result.state) {
      if (result.state === 'up') logger.info({ llm: client.displayUrl, model }, 'LLM available');
      else logger.warn({ llm: client.displayUrl, state: result.state, detail }, 'LLM not available');
    }
    return this.current;
  }
}

/** `<prefix>llm_up`: 1 while the monitored LLM answers its health check, read at each scrape. */
export function registerLlmUpGauge(metrics: KitMetrics, monitor: { readonly status: LlmStatus }): void {
  new Gauge({
    name: `${metrics.prefix}llm_up`,
    help: '1 while the LLM answers its health check, else 0.',
    registers: [metrics.registry],
    collect() {
      this.set(monitor.status.state === 'up' ? 1 : 0);
    },
  });
}
