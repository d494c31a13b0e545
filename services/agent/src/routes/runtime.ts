import type { ConcurrencyGate, Logger, Readiness } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { AgentConfig } from '../config.js';
import type { IntentDetector } from '../domain/intent/index.js';
import type { SessionStore } from '../domain/sessions.js';
import type { LlmRouter } from '../domain/types.js';
import type { UpstreamPool } from '../adapters/upstream-pool.js';
import type { AgentMetrics } from '../metrics.js';

/** What the agent's routes share (built once in app.ts). */
export interface AgentRuntime {
  readonly config: AgentConfig;
  readonly version: string;
  readonly logger: Logger;
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly gpu: GpuStatusReader;
  readonly metrics: AgentMetrics;
  /** Routes LLM calls across the three upstreams (retries, fallback, cooldown). */
  readonly router: LlmRouter;
  /** The upstreams' health and cooldown state (for /status, /health). */
  readonly upstreams: UpstreamPool;
  readonly sessions: SessionStore;
  readonly intents: IntentDetector;
  /** Epoch ms (sessions' TTL and timestamps). */
  readonly now: () => number;
  readonly newSessionId: () => string;
  readonly startedAt: number;
}
