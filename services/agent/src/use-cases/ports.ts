import type { ConcurrencyGate, Logger } from '@clinicalsuite/kit';
import type { UpstreamStatus } from '../domain/types.js';
import type { SubserviceHealth } from '../domain/subservices.js';
import type { AgentConfig } from '../config.js';
import type { IntentDecision, IntentInput } from '../domain/intent/index.js';
import type { SessionStore } from '../domain/sessions.js';
import type { Subservices } from '../domain/subservices.js';
import type { LlmRouter, UpstreamId } from '../domain/types.js';
import type { AgentMetrics } from '../metrics.js';
import type { ShellRequest, ShellResponse } from '../schemas/shell.js';

/**
 * What the agent's use cases are given: the adapters they call, as interfaces (built in app.ts), and
 * the request they serve (`Call`). A use case takes parsed input, returns a domain result or an
 * async iterable of events, and knows nothing of Express (docs/architecture.md, "How a service is
 * assembled").
 */

/** What a use case is given by the request it serves. */
export interface Call {
  /** Aborted on the deadline or when the client goes away: stop the work. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** When the work began (`performance.now()` ms): `processing_time_ms` counts from here. */
  readonly since: number;
}

/** Which transport carries a streamed reply (the `agent_streams_open` label). */
export type Transport = 'sse' | 'ws';

export interface IntentDecider {
  decide(input: IntentInput, signal: AbortSignal): Promise<IntentDecision>;
}

/** The guarded shell (adapters/shell). */
export interface ShellPort {
  /** SHELL_EXEC_ENABLED. */
  readonly enabled: boolean;
  run(request: ShellRequest, signal: AbortSignal, log: Logger): Promise<ShellResponse>;
  /** Counts and logs a request refused while disabled; the error to answer with. */
  refuseDisabled(log: Logger): Error;
}

/** The LLM upstreams' health, as the pool probes it. */
export interface UpstreamHealth {
  /** The upstream ids, in configuration order. */
  readonly ids: readonly UpstreamId[];
  /** Probes every upstream now (joins a round in flight). */
  check(): Promise<readonly UpstreamStatus[]>;
  /** The last probe results and cooldowns, without probing. */
  statuses(): UpstreamStatus[];
}

/** The sub-services, and a check of each one's health. */
export interface SubservicePort extends Subservices {
  check(signal: AbortSignal): Promise<SubserviceHealth[]>;
}

export interface UseCaseDeps {
  readonly config: AgentConfig;
  readonly version: string;
  /** Routes LLM calls across the three upstreams (retries, fallback, cooldown). */
  readonly router: LlmRouter;
  readonly upstreams: UpstreamHealth;
  readonly sessions: SessionStore;
  readonly subservices: SubservicePort;
  readonly shell: ShellPort;
  readonly metrics: AgentMetrics;
  /** The kit's concurrency gate, which the status report shows. */
  readonly gate: Pick<ConcurrencyGate, 'limit' | 'running' | 'waiting' | 'queueSize'>;
  /** Epoch ms (sessions' TTL, timestamps). */
  readonly now: () => number;
  readonly newSessionId: () => string;
  /** Epoch ms the agent started. */
  readonly startedAt: number;
  /** The service's log, for what no request's log carries (the intent classifier's failures). */
  readonly logger: Logger;
}
