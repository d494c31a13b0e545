import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BadGatewayError,
  BadRequestError,
  ClientClosedRequestError,
  PayloadTooLargeError,
  type Logger,
  type Readiness,
  type ReadinessSignal,
  type ResourceSpec,
} from '@clinicalsuite/kit';
import type { AgentConfig, UpstreamConfig } from '../config.js';
import { upstreamOrder } from '../domain/routing.js';
import type {
  LlmCall,
  LlmResult,
  LlmRouter,
  LlmStream,
  UpstreamId,
  UpstreamStatus,
} from '../domain/types.js';
import type { AgentMetrics, UpstreamOutcome } from '../metrics.js';
import { UpstreamClient, UpstreamFailure, type ProbeResult, type UpstreamStream } from './llm-upstream.js';

export type { UpstreamStatus };

/**
 * The LLM router: the three upstreams behind one `LlmRouter`. A call goes to the upstreams in the
 * order `upstreamOrder` gives (the forced one first, even while it cools down; code and debug to
 * `beta3_service` first), the others cooling down last. On one upstream it retries a connection
 * failure or a 502/503/504 with exponential backoff; when that upstream still fails or times out
 * it moves on to the next (a stream too, as long as nothing reached the client) and puts the failed
 * one in cooldown. A refusal of the client's input (`UpstreamFailure.inputRefused`: a prompt over
 * the context, 400/422 saying so, or 413; a 400/422 validation error or one naming a parameter the
 * client sent) is not tried elsewhere: it is the client's (400, 413). Any other refusal (404 for an
 * unknown model name, an unsupported parameter, a refused token) is the upstream's configuration:
 * the call falls back (a 400/422 without a cooldown). When every upstream failed or timed out: 502
 * (spec, Errors), naming them.
 *
 * It also probes each upstream's health periodically (from `start()` to `stop()`): its readiness
 * condition is met once any upstream answered, a probe that finds a cooling upstream healthy ends
 * its cooldown, and `/status` reads the results.
 */

export interface UpstreamPoolOptions {
  readonly upstreams: readonly UpstreamConfig[];
  readonly timeoutMs: number;
  readonly firstByteTimeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly cooldownMs: number;
  readonly probeMs: number;
  /** Deadline of one health probe. */
  readonly probeTimeoutMs: number;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  /**
   * The agent's condition that an LLM upstream answered: unmet, with the probes' findings, until one
   * did; met from then on (later outages answer 502 per call, not 503 for the agent).
   */
  readonly readiness: ReadinessSignal;
  /** Epoch ms. */
  readonly now: () => number;
}

interface Upstream {
  readonly client: UpstreamClient;
  readonly configuredModel: string | undefined;
  probe: ProbeResult | null;
  checkedAt: number | null;
  cooldownUntil: number;
}

export class UpstreamPool implements LlmRouter {
  private readonly upstreams = new Map<UpstreamId, Upstream>();
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<readonly UpstreamStatus[]> | undefined;
  private readonly stopController = new AbortController();

  constructor(private readonly options: UpstreamPoolOptions) {
    for (const u of options.upstreams) {
      this.upstreams.set(u.id, {
        client: new UpstreamClient({
          id: u.id,
          baseUrl: u.baseUrl,
          token: u.token,
          metrics: options.metrics.registry,
        }),
        configuredModel: u.model,
        probe: null,
        checkedAt: null,
        cooldownUntil: 0,
      });
    }
  }

  /** The condition the probes report to: met once any upstream answered. */
  get readiness(): ReadinessSignal {
    return this.options.readiness;
  }

  /** The upstream ids, in configuration order. */
  get ids(): readonly UpstreamId[] {
    return [...this.upstreams.keys()];
  }

  /** Whether each upstream answered its last probe and is not cooling down (metrics). */
  upMap(): ReadonlyMap<string, boolean> {
    const now = this.options.now();
    return new Map(
      [...this.upstreams].map(([id, u]) => [id, u.probe?.state === 'up' && u.cooldownUntil <= now]),
    );
  }

  async complete(call: LlmCall, signal: AbortSignal): Promise<LlmResult> {
    const started = performance.now();
    const { value, upstream, fellBackFrom } = await this.attemptInOrder(call, signal, (u, model) =>
      this.completeOn(u, call, model, signal),
    );
    const m = this.options.metrics;
    m.tokens.inc({ upstream, kind: 'prompt' }, value.usage.promptTokens);
    m.tokens.inc({ upstream, kind: 'completion' }, value.usage.completionTokens);
    return {
      text: value.text,
      model: upstream,
      upstreamModel: value.upstreamModel,
      finishReason: value.finishReason,
      usage: value.usage,
      fellBackFrom,
      llmMs: performance.now() - started,
    };
  }

  async stream(call: LlmCall, signal: AbortSignal): Promise<LlmStream> {
    const { value, upstream, fellBackFrom } = await this.attemptInOrder(call, signal, (u, model) =>
      this.streamOn(u, call, model, signal),
    );
    const metrics = this.options.metrics;
    const fragments = value.fragments;
    return {
      model: upstream,
      get upstreamModel() {
        return value.upstreamModel;
      },
      fellBackFrom,
      get finishReason() {
        return value.finishReason();
      },
      get usage() {
        return value.usage();
      },
      async *[Symbol.asyncIterator]() {
        try {
          yield* fragments;
        } catch (error) {
          // After the first fragment nothing can fall back: the reply ends with a 502 that names
          // the upstream and why (it broke off, went silent, sent an error).
          throw error instanceof UpstreamFailure ? new BadGatewayError(error.message) : error;
        } finally {
          const usage = value.usage();
          metrics.tokens.inc({ upstream, kind: 'prompt' }, usage.promptTokens);
          metrics.tokens.inc({ upstream, kind: 'completion' }, usage.completionTokens);
        }
      },
    };
  }

  /** Probes every upstream now (joins a round in flight) and schedules the next round. */
  check(signal?: AbortSignal): Promise<readonly UpstreamStatus[]> {
    this.probing ??= this.probeAll(signal).finally(() => {
      this.probing = undefined;
      this.schedule();
    });
    return this.probing;
  }

  /** The last probe results and cooldowns, without probing. */
  statuses(): UpstreamStatus[] {
    const now = this.options.now();
    return [...this.upstreams.values()].map((u) => this.view(u, now));
  }

  start(): void {
    void this.check();
  }

  stop(): void {
    this.stopController.abort();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.stopController.signal.aborted) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), this.options.probeMs);
    this.timer.unref();
  }

  private async probeAll(signal?: AbortSignal): Promise<readonly UpstreamStatus[]> {
    const deadline = AbortSignal.timeout(this.options.probeTimeoutMs);
    const abort = AbortSignal.any([this.stopController.signal, deadline, ...(signal ? [signal] : [])]);
    // Each upstream on its own, even when they share LLM_URL: a few cheap GETs, and each result
    // names its upstream.
    await Promise.all(
      [...this.upstreams.values()].map(async (u) => this.record(u, await u.client.probe(abort))),
    );
    const { readiness } = this.options;
    if (!readiness.ready && !this.stopController.signal.aborted) {
      // Not ready before any upstream answered: say why, once per URL (all three share LLM_URL
      // by default), lower-cased into the sentence.
      const byUrl = new Map<string, string>();
      for (const u of this.upstreams.values())
        if (!byUrl.has(u.client.baseUrl))
          byUrl.set(u.client.baseUrl, u.probe?.detail ?? `${u.client.id}: not checked yet`);
      const causes = [...byUrl.values()].map((d) => d.charAt(0).toLowerCase() + d.slice(1));
      readiness.setNotReady(`no LLM upstream has answered yet: ${causes.join('; ')}`);
    }
    return this.statuses();
  }

  private record(u: Upstream, probe: ProbeResult): void {
    const { logger, readiness, now } = this.options;
    if (this.stopController.signal.aborted) return;
    const previous = u.probe?.state;
    u.probe = probe;
    u.checkedAt = now();
    if (probe.state === 'up') {
      if (u.cooldownUntil > u.checkedAt)
        logger.info({ upstream: u.client.id }, 'LLM upstream healthy again: cooldown ended');
      u.cooldownUntil = 0;
      // Ready once any upstream answered; later outages answer 502 per call, not 503 for the agent.
      readiness.setReady();
    }
    if (previous !== probe.state) {
      const fields = {
        upstream: u.client.id,
        url: u.client.displayUrl,
        state: probe.state,
        detail: probe.detail,
      };
      if (probe.state === 'up') logger.info(fields, 'LLM upstream available');
      else logger.warn(fields, 'LLM upstream not available');
    }
  }

  private view(u: Upstream, now: number): UpstreamStatus {
    const cooling = u.cooldownUntil > now;
    return {
      id: u.client.id,
      url: u.client.displayUrl,
      state: u.probe?.state ?? 'unknown',
      latency_ms: u.probe?.latencyMs ?? null,
      detail: u.probe?.detail ?? null,
      model: this.modelOf(u),
      cooling_down: cooling,
      cooldown_until: cooling ? new Date(u.cooldownUntil).toISOString() : null,
      checked_at: u.checkedAt === null ? null : new Date(u.checkedAt).toISOString(),
    };
  }

  private modelOf(u: Upstream): string | null {
    return u.configuredModel ?? u.probe?.models[0] ?? null;
  }

  /** The model name to send: configured, else what the last probe listed (probing once if never). */
  private async resolveModel(u: Upstream, signal: AbortSignal): Promise<string> {
    let model = this.modelOf(u);
    if (model !== null) return model;
    this.record(
      u,
      await u.client.probe(AbortSignal.any([signal, AbortSignal.timeout(this.options.probeTimeoutMs)])),
    );
    model = this.modelOf(u);
    if (model !== null) return model;
    throw new UpstreamFailure(
      u.client.id,
      u.probe?.state === 'up' ? 'bad_response' : 'connection',
      u.probe?.detail ?? u.client.say('lists no model: set its AGENT_<ID>_MODEL'),
    );
  }

  /**
   * Tries `run` on each upstream in order until one succeeds. Retries happen inside `runWithRetries`;
   * an upstream whose base URL already failed to connect in this call is not tried again under
   * another name (the three share LLM_URL by default).
   */
  private async attemptInOrder<T>(
    call: LlmCall,
    signal: AbortSignal,
    run: (u: Upstream, model: string) => Promise<T>,
  ): Promise<{ value: T; upstream: UpstreamId; fellBackFrom: UpstreamId[] }> {
    const { metrics, logger } = this.options;
    const now = this.options.now();
    const order = upstreamOrder(call.intent, call.prefer ?? null, this.ids).flatMap((id) => {
      const u = this.upstreams.get(id);
      return u === undefined ? [] : [u];
    });
    // A forced upstream (force_llm) is tried first, cooling down or not: the client asked for it,
    // and when another answers, fell_back_from names it. Among the others, cooling upstreams are
    // the last resort, not skipped outright.
    const forced = call.prefer ?? null;
    const others = order.filter((u) => u.client.id !== forced);
    const candidates = [
      ...order.filter((u) => u.client.id === forced),
      ...others.filter((u) => u.cooldownUntil <= now),
      ...others.filter((u) => u.cooldownUntil > now),
    ];
    const failed: UpstreamId[] = [];
    const deadUrls = new Set<string>();
    let last: UpstreamFailure | undefined;
    for (const u of candidates) {
      const id = u.client.id;
      if (deadUrls.has(u.client.baseUrl)) {
        failed.push(id);
        continue;
      }
      const previous = failed.at(-1);
      if (previous !== undefined) metrics.fallbacks.inc({ from: previous, to: id });
      try {
        const value = await this.runWithRetries(u, signal, run);
        if (failed.length > 0)
          logger.info({ upstream: id, fellBackFrom: failed }, 'LLM call answered after fallback');
        return { value, upstream: id, fellBackFrom: failed };
      } catch (error) {
        if (!(error instanceof UpstreamFailure)) throw error;
        // The client's input is too long for the model, or a value it sent is invalid: every
        // upstream would refuse it. `messages`: the only error shape that shows a param is the
        // chat-completions one, whose input is `messages`; the code is OpenAI's.
        const refused = error.inputRefused;
        if (refused === 'too_large') throw new PayloadTooLargeError(error.message, { param: 'messages' });
        if (refused === 'context') {
          throw new BadRequestError(error.message, { param: 'messages', code: 'context_length_exceeded' });
        }
        if (refused === 'invalid') {
          const param = error.refusedParam;
          throw new BadRequestError(error.message, param === null ? {} : { param });
        }
        last = error;
        failed.push(id);
        if (error.kind === 'connection' || error.kind === 'timeout') deadUrls.add(u.client.baseUrl);
        if (error.status !== 429 && !error.requestSpecific) this.coolDown(u, error);
        logger.warn(
          { upstream: id, kind: error.kind, status: error.status, err: error.message },
          'LLM upstream failed',
        );
      }
    }
    metrics.exhausted.inc();
    const tried = failed.join(', ');
    const cause = last?.message ?? 'no LLM upstream is configured';
    // 502 whether the last one failed or timed out (spec, Errors: "LLM sub-service timed out or
    // failed"); 504 is kept for the agent's own request deadline.
    const what = last?.kind === 'timeout' ? 'failed or timed out' : 'failed';
    throw new BadGatewayError(`Every LLM upstream ${what} (${tried}); last: ${cause}`);
  }

  private async runWithRetries<T>(
    u: Upstream,
    signal: AbortSignal,
    run: (u: Upstream, model: string) => Promise<T>,
  ): Promise<T> {
    const { metrics, retries, backoffMs } = this.options;
    const upstream = u.client.id;
    for (let attempt = 1; ; attempt++) {
      try {
        const model = await this.resolveModel(u, signal);
        const value = await run(u, model);
        metrics.upstreamRequests.inc({ upstream, outcome: 'ok' });
        return value;
      } catch (error) {
        if (signal.aborted) {
          metrics.upstreamRequests.inc({ upstream, outcome: 'aborted' });
          throw signal.reason instanceof Error ? signal.reason : error;
        }
        if (!(error instanceof UpstreamFailure)) throw error;
        metrics.upstreamRequests.inc({ upstream, outcome: outcomeOf(error) });
        if (!error.retryable || attempt > retries) throw error;
        metrics.upstreamRetries.inc({
          upstream,
          reason: error.kind === 'connection' ? 'connection' : `status_${error.status ?? 0}`,
        });
        const backoff = backoffMs * 2 ** (attempt - 1);
        // Full jitter on half the backoff, so replicas retrying together spread out.
        await sleep(backoff / 2 + Math.random() * (backoff / 2), undefined, { signal }).catch(() => {
          throw signal.reason instanceof Error ? signal.reason : new ClientClosedRequestError();
        });
      }
    }
  }

  private coolDown(u: Upstream, error: UpstreamFailure): void {
    const { cooldownMs, metrics, now } = this.options;
    if (cooldownMs <= 0) return;
    u.cooldownUntil = now() + cooldownMs;
    metrics.cooldowns.inc({ upstream: u.client.id });
    this.options.logger.warn(
      { upstream: u.client.id, cooldownMs, kind: error.kind },
      'LLM upstream put in cooldown',
    );
  }

  private async completeOn(u: Upstream, call: LlmCall, model: string, signal: AbortSignal) {
    const started = performance.now();
    const value = await u.client.complete(call, model, signal, this.options.timeoutMs);
    this.options.metrics.upstreamDuration.observe(
      { upstream: u.client.id },
      (performance.now() - started) / 1000,
    );
    return value;
  }

  private async streamOn(
    u: Upstream,
    call: LlmCall,
    model: string,
    signal: AbortSignal,
  ): Promise<UpstreamStream> {
    const started = performance.now();
    const value = await u.client.stream(call, model, signal, this.options.firstByteTimeoutMs);
    this.options.metrics.upstreamFirstByte.observe(
      { upstream: u.client.id },
      (performance.now() - started) / 1000,
    );
    return value;
  }
}

/**
 * The pool over the configured upstreams, with the agent's timeouts, retries and cooldown; its
 * condition of the service's readiness is unmet, with what the probes found, until one answers.
 */
export function createUpstreamPool(
  config: AgentConfig,
  deps: Pick<UpstreamPoolOptions, 'metrics' | 'logger' | 'now'> & { readonly readiness: Readiness },
): UpstreamPool {
  return new UpstreamPool({
    upstreams: config.upstreams,
    timeoutMs: config.AGENT_LLM_TIMEOUT_MS,
    firstByteTimeoutMs: config.AGENT_LLM_FIRST_BYTE_TIMEOUT_MS,
    retries: config.AGENT_LLM_RETRIES,
    backoffMs: config.AGENT_LLM_BACKOFF_MS,
    cooldownMs: config.AGENT_LLM_COOLDOWN_MS,
    probeMs: config.AGENT_LLM_PROBE_MS,
    probeTimeoutMs: config.AGENT_STATUS_TIMEOUT_MS,
    metrics: deps.metrics,
    logger: deps.logger,
    readiness: deps.readiness.condition('starting: no LLM upstream has answered yet'),
    now: deps.now,
  });
}

/** The pool's probes as a kit resource: they start once the server listens and stop on shutdown. */
export function upstreamProbes(pool: UpstreamPool): ResourceSpec<UpstreamPool> {
  return {
    name: 'the LLM upstream probes',
    open: () => {
      pool.start();
      return pool;
    },
    close: (p) => p.stop(),
  };
}

function outcomeOf(error: UpstreamFailure): UpstreamOutcome {
  if (error.kind === 'timeout') return 'timeout';
  if (error.status !== null && error.status >= 400 && error.status < 500) return 'refused';
  return 'error';
}
