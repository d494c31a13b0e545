import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The agent's own metrics (`agent_` prefix). Labels hold only bounded values: intents, upstream
 * ids, sub-service names, pipeline and step names, outcomes. Never ids, messages or commands.
 */

export type UpstreamOutcome = 'ok' | 'error' | 'timeout' | 'aborted' | 'refused';
export type SubserviceOutcome = 'ok' | 'error' | 'timeout' | 'unavailable' | 'not_configured' | 'aborted';
export type ShellOutcome =
  'executed' | 'failed' | 'timeout' | 'refused_disabled' | 'refused_policy' | 'refused_translation';
export type IntentSource = 'forced' | 'fixed' | 'rules' | 'llm' | 'default';

export interface AgentMetrics {
  /** The service's registry, where the outbound clients count their calls. */
  readonly registry: Registry;
  /** Requests by detected/forced intent and how it was decided. */
  readonly intents: Counter<'intent' | 'source'>;
  /** LLM attempts per upstream and outcome. */
  readonly upstreamRequests: Counter<'upstream' | 'outcome'>;
  /** Seconds per successful LLM call (to the last byte), per upstream. */
  readonly upstreamDuration: Histogram<'upstream'>;
  /** Seconds to the first fragment of a streamed reply, per upstream. */
  readonly upstreamFirstByte: Histogram<'upstream'>;
  readonly upstreamRetries: Counter<'upstream' | 'reason'>;
  /** A call moved on from `from` to `to`. */
  readonly fallbacks: Counter<'from' | 'to'>;
  /** An upstream was put in cooldown. */
  readonly cooldowns: Counter<'upstream'>;
  /** Calls that no upstream could answer (502). */
  readonly exhausted: Counter;
  readonly tokens: Counter<'upstream' | 'kind'>;
  readonly subserviceRequests: Counter<'subservice' | 'outcome'>;
  readonly subserviceDuration: Histogram<'subservice'>;
  readonly pipelineSteps: Histogram<'pipeline' | 'step'>;
  /** Streams open now (SSE responses and WebSocket replies). */
  readonly streamsOpen: Gauge<'transport'>;
  readonly wsConnections: Gauge;
  readonly wsAuthFailures: Counter<'reason'>;
  readonly shellAttempts: Counter<'outcome'>;
  readonly sessionsCreated: Counter;
  readonly sessionsEnded: Counter<'reason'>;
  /** Messages dropped from the prompt to fit the context. */
  readonly historyTrimmed: Counter;
  /** The agent's own time per request (everything but upstream and sub-service calls). */
  readonly overhead: Histogram;
}

const SECONDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
];

export function createAgentMetrics(kit: KitMetrics): AgentMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  return {
    registry: kit.registry,
    intents: new Counter({
      name: `${p}intents_total`,
      help: 'Requests by intent and how it was decided (forced, fixed by the endpoint, rules, llm, default).',
      labelNames: ['intent', 'source'] as const,
      registers,
    }),
    upstreamRequests: new Counter({
      name: `${p}upstream_requests_total`,
      help: 'LLM upstream attempts by upstream and outcome (ok, error, timeout, aborted, refused).',
      labelNames: ['upstream', 'outcome'] as const,
      registers,
    }),
    upstreamDuration: new Histogram({
      name: `${p}upstream_request_duration_seconds`,
      help: 'Seconds from sending a call to an LLM upstream to its last byte (successful calls).',
      labelNames: ['upstream'] as const,
      buckets: SECONDS,
      registers,
    }),
    upstreamFirstByte: new Histogram({
      name: `${p}upstream_time_to_first_fragment_seconds`,
      help: 'Seconds from sending a streamed call to an LLM upstream to its first text fragment.',
      labelNames: ['upstream'] as const,
      buckets: SECONDS,
      registers,
    }),
    upstreamRetries: new Counter({
      name: `${p}upstream_retries_total`,
      help: 'Retries of an LLM upstream by reason (connection, status_502, status_503, status_504).',
      labelNames: ['upstream', 'reason'] as const,
      registers,
    }),
    fallbacks: new Counter({
      name: `${p}upstream_fallbacks_total`,
      help: 'Calls moved on from one LLM upstream to the next after a failure or timeout.',
      labelNames: ['from', 'to'] as const,
      registers,
    }),
    cooldowns: new Counter({
      name: `${p}upstream_cooldowns_total`,
      help: 'Times an LLM upstream was put in cooldown after failing.',
      labelNames: ['upstream'] as const,
      registers,
    }),
    exhausted: new Counter({
      name: `${p}upstream_exhausted_total`,
      help: 'Calls that every LLM upstream failed (answered 502).',
      registers,
    }),
    tokens: new Counter({
      name: `${p}upstream_tokens_total`,
      help: 'Tokens the LLM upstreams reported, by upstream and kind (prompt, completion).',
      labelNames: ['upstream', 'kind'] as const,
      registers,
    }),
    subserviceRequests: new Counter({
      name: `${p}subservice_requests_total`,
      help: 'Calls to sub-services by sub-service and outcome (ok, error, timeout, unavailable, not_configured, aborted).',
      labelNames: ['subservice', 'outcome'] as const,
      registers,
    }),
    subserviceDuration: new Histogram({
      name: `${p}subservice_request_duration_seconds`,
      help: 'Seconds per sub-service call, by sub-service.',
      labelNames: ['subservice'] as const,
      buckets: SECONDS,
      registers,
    }),
    pipelineSteps: new Histogram({
      name: `${p}pipeline_step_duration_seconds`,
      help: 'Seconds per pipeline step, by pipeline and step.',
      labelNames: ['pipeline', 'step'] as const,
      buckets: SECONDS,
      registers,
    }),
    streamsOpen: new Gauge({
      name: `${p}streams_open`,
      help: 'Streamed replies in progress, by transport (sse, ws).',
      labelNames: ['transport'] as const,
      registers,
    }),
    wsConnections: new Gauge({
      name: `${p}websocket_connections`,
      help: 'WebSocket connections open on /ws/chat.',
      registers,
    }),
    wsAuthFailures: new Counter({
      name: `${p}websocket_auth_failures_total`,
      help: 'WebSocket connections closed for failed authentication, or refused past a cap on unauthenticated ones, by reason.',
      labelNames: ['reason'] as const,
      registers,
    }),
    shellAttempts: new Counter({
      name: `${p}shell_attempts_total`,
      help: 'Shell requests by outcome (executed, failed, timeout, refused_disabled, refused_policy, refused_translation).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    sessionsCreated: new Counter({
      name: `${p}sessions_created_total`,
      help: 'Sessions started.',
      registers,
    }),
    sessionsEnded: new Counter({
      name: `${p}sessions_ended_total`,
      help: 'Sessions ended, by reason (deleted, expired, evicted).',
      labelNames: ['reason'] as const,
      registers,
    }),
    historyTrimmed: new Counter({
      name: `${p}history_messages_trimmed_total`,
      help: 'Earlier session messages left out of a prompt so that it fits the context window.',
      registers,
    }),
    overhead: new Histogram({
      name: `${p}overhead_seconds`,
      help: "The agent's own seconds per request: its total minus the time spent waiting on upstreams.",
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
      registers,
    }),
  };
}

/** The gauges that read the service's parts, registered once those exist. */
export function registerAgentGauges(
  kit: KitMetrics,
  parts: {
    sessions: { readonly size: number };
    upstreams: { upMap(): ReadonlyMap<string, boolean> };
  },
): void {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}sessions`,
    help: 'Sessions held in memory by this replica.',
    registers,
    collect() {
      this.set(parts.sessions.size);
    },
  });
  new Gauge({
    name: `${p}upstream_up`,
    help: '1 while an LLM upstream answers its health check and is not cooling down, else 0.',
    labelNames: ['upstream'] as const,
    registers,
    collect() {
      for (const [upstream, up] of parts.upstreams.upMap()) this.set({ upstream }, up ? 1 : 0);
    },
  });
}
