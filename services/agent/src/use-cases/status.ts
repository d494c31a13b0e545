import { performance } from 'node:perf_hooks';
import type { z } from 'zod';
import type { UpstreamStatus } from '../domain/types.js';
import type { StatusResponseSchema } from '../schemas/subservices.js';
import type { UseCaseDeps } from './ports.js';

/**
 * The agent's status report (`GET /status`): every sub-service's `/health` and the three LLM
 * upstreams' probes, all in parallel, each within AGENT_STATUS_TIMEOUT_MS, with the state and
 * latency of each; plus sessions and the concurrency gate. A report, never an error (the health
 * probe is the readiness). Also the LLMs' last known states, without probing (`/health`).
 */

type LlmView = z.infer<typeof StatusResponseSchema>['llms'][number];

export type StatusDeps = Pick<
  UseCaseDeps,
  'config' | 'version' | 'upstreams' | 'subservices' | 'sessions' | 'gate' | 'now' | 'startedAt'
>;

export function statusUseCase(deps: StatusDeps) {
  return {
    report: async (signal: AbortSignal) => {
      const { config, gate } = deps;
      const started = performance.now();
      const [subservices, llms] = await Promise.all([deps.subservices.check(signal), checkLlms(deps)]);
      const llmUp = llms.some((l) => l.state === 'up' && !l.cooling_down);
      const allUp =
        llms.every((l) => l.state === 'up' && !l.cooling_down) &&
        subservices.every((s) => s.state === 'up' || s.state === 'not_configured');
      return {
        status: !llmUp ? ('down' as const) : allUp ? ('ok' as const) : ('degraded' as const),
        service: 'ai_agent' as const,
        version: deps.version,
        uptime_seconds: Math.max(0, Math.floor((deps.now() - deps.startedAt) / 1000)),
        checked_at: new Date(deps.now()).toISOString(),
        check_ms: Math.round((performance.now() - started) * 10) / 10,
        subservices,
        llms,
        sessions: {
          active: deps.sessions.size,
          max: config.AGENT_MAX_SESSIONS,
          ttl_seconds: config.AGENT_SESSION_TTL_S,
          replica_local: true as const,
        },
        gate: { limit: gate.limit, running: gate.running, waiting: gate.waiting, queue_size: gate.queueSize },
      };
    },
    /** Each LLM upstream's last probed state and cooldown, without probing. */
    llmStates: () =>
      deps.upstreams.statuses().map((u) => ({ id: u.id, state: u.state, cooling_down: u.cooling_down })),
  };
}

/**
 * The upstream pool's probe round, within AGENT_STATUS_TIMEOUT_MS: an upstream whose probe has not
 * come back by then is `down` ("no answer within ..."), the others as probed. Never throws.
 */
async function checkLlms(deps: Pick<StatusDeps, 'config' | 'upstreams' | 'now'>): Promise<LlmView[]> {
  const timeoutMs = deps.config.AGENT_STATUS_TIMEOUT_MS;
  const since = deps.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  let probed: readonly UpstreamStatus[] | null;
  try {
    // Not tied to this request: a client that leaves must not cut the pool's probe round short (it
    // would record every upstream as down); the round has its own deadline.
    probed = await Promise.race([deps.upstreams.check(), late]);
  } catch {
    probed = null;
  } finally {
    clearTimeout(timer);
  }
  const fresh = (s: UpstreamStatus): boolean =>
    s.checked_at !== null && Date.parse(s.checked_at) >= since - 1;
  return (probed ?? deps.upstreams.statuses()).map((s): LlmView => {
    if (probed !== null || fresh(s)) return view(s);
    return {
      ...view(s),
      state: 'down',
      latency_ms: timeoutMs,
      detail: `no answer within ${timeoutMs} ms (AGENT_STATUS_TIMEOUT_MS)${s.state === 'unknown' ? '' : `; last probe: ${s.state}`}`,
    };
  });
}

function view(s: UpstreamStatus): LlmView {
  return {
    id: s.id,
    url: s.url,
    state: s.state === 'unknown' ? 'down' : s.state,
    latency_ms: s.latency_ms,
    detail: s.state === 'unknown' ? (s.detail ?? 'not probed yet') : s.detail,
    model: s.model,
    cooling_down: s.cooling_down,
    cooldown_until: s.cooldown_until,
    checked_at: s.checked_at,
  };
}
