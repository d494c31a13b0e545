import { randomUUID } from 'node:crypto';
import { createKit, serviceAuth, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { createShell } from './adapters/shell/index.js';
import { createSubservices } from './adapters/subservices/index.js';
import { createUpstreamPool, upstreamProbes, type UpstreamPool } from './adapters/upstream-pool.js';
import type { AgentConfig } from './config.js';
import { SessionStore } from './domain/sessions.js';
import { createAgentMetrics, registerAgentGauges } from './metrics.js';
import { API_INFO, agentRoutes, chatSocket } from './routes/index.js';
import { createUseCases } from './use-cases/index.js';

export const SERVICE = 'agent';
export const VERSION = '0.1.0';
/** The token scope the agent requires (spec, Authentication). */
export const AGENT_SCOPE = 'ai_agent';

export interface AgentDeps {
  readonly config: AgentConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  /** Epoch ms (sessions' TTL, cooldowns, timestamps). */
  readonly now?: () => number;
  readonly processMetrics?: boolean;
}

export interface AgentService {
  readonly kit: KitApp;
  /** The LLM router over the three upstreams, and their probes. */
  readonly upstreams: UpstreamPool;
  readonly sessions: SessionStore;
}

/**
 * The agent, assembled in one pass (docs/architecture.md, "How a service is assembled"): the kit's
 * parts; what it opens once listening and closes on shutdown (the upstreams' probes, the session
 * sweeper, the shell's commands); its use cases on its adapters; the routes, and `WS /ws/chat`,
 * whose sockets close as shutdown begins. `serve(kit)` listens, then opens.
 */
export function buildAgentApp({ config, ...deps }: AgentDeps): AgentService {
  const now = deps.now ?? (() => Date.now());
  // The spec: all but /, /health and /capabilities need an `ai_agent` token; another scope is 401.
  const auth = serviceAuth(config, {
    scope: AGENT_SCOPE,
    tokenEnv: 'AI_AGENT_API_TOKEN',
    token: config.AI_AGENT_API_TOKEN,
    alwaysOn: true,
    scopeFailureStatus: 401,
  });
  const kit = createKit({
    ...API_INFO,
    service: SERVICE,
    version: VERSION,
    config,
    auth,
    gpuStatusPath: '/gpu',
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const { logger, readiness, gate } = kit;
  const metrics = createAgentMetrics(kit.metrics);
  const sessions = new SessionStore(
    config.AGENT_SESSION_TTL_S * 1000,
    config.AGENT_MAX_SESSIONS,
    config.AGENT_SESSION_MAX_MESSAGES,
    (reason) => metrics.sessionsEnded.inc({ reason }),
  );
  const upstreams = createUpstreamPool(config, { metrics, logger, readiness, now });
  registerAgentGauges(kit.metrics, { sessions, upstreams });
  kit.resource(upstreamProbes(upstreams));
  const sweepMs = Math.min(60_000, config.AGENT_SESSION_TTL_S * 1000);
  kit.every('the session sweeper', sweepMs, () => sessions.sweep(now()));
  const shell = kit.own(createShell(config, { router: upstreams, logger, metrics }), (s) => s.close());
  const useCases = createUseCases({
    config,
    version: VERSION,
    router: upstreams,
    upstreams,
    sessions,
    subservices: createSubservices(config, { metrics, logger }),
    shell,
    metrics,
    gate,
    now,
    newSessionId: () => randomUUID(),
    startedAt: now(),
    logger,
  });
  const routes = { config, version: VERSION, readiness, useCases };
  const socket = chatSocket({ ...routes, auth, gate, metrics, logger });
  const mounted = kit.mount(agentRoutes(routes), { attach: socket.attach, beforeDrain: socket.close });
  return { kit: mounted, upstreams, sessions };
}
