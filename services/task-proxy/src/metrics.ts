import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { AgentStatus } from './adapters/agent-monitor.js';
import { ACTIONS } from './schemas/actions.js';

/**
 * The task proxy's own metrics (`task_proxy_` prefix). Labels are fixed sets (action names,
 * outcomes, reasons): never a user, a session, a task id or an address.
 */

export const ACTION_OUTCOMES = [
  'ok',
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'unavailable',
  'upstream_error',
  'error',
] as const;
export type ActionOutcome = (typeof ACTION_OUTCOMES)[number];

export const SIGN_IN_OUTCOMES = ['success', 'bad_credentials', 'rate_limited', 'bad_request'] as const;
export type SignInOutcome = (typeof SIGN_IN_OUTCOMES)[number];

export const SESSION_ENDS = ['signed_out', 'expired', 'evicted', 'rotated'] as const;

export interface TaskProxyMetrics {
  readonly actions: Counter<'action' | 'outcome'>;
  readonly offlineAnswers: Counter<'action'>;
  readonly signIns: Counter<'outcome'>;
  readonly sessionsEnded: Counter<'reason'>;
  readonly upstream: Histogram<'operation' | 'outcome'>;
}

/** Action label: a known action, or `unknown` (never the raw value a client sent). */
export function actionLabel(action: unknown): string {
  return typeof action === 'string' && (ACTIONS as readonly string[]).includes(action) ? action : 'unknown';
}

/** What the proxy counts (actions, sign-ins, sessions ended, calls to the agent). */
export function createTaskProxyMetrics(kit: KitMetrics): TaskProxyMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  const actions = new Counter({
    name: `${p}actions_total`,
    help: 'Actions of /api/agent_proxy.php answered, by action (unknown for an invalid one) and outcome.',
    labelNames: ['action', 'outcome'] as const,
    registers,
  });
  for (const action of ACTIONS) actions.inc({ action, outcome: 'ok' }, 0);
  const offlineAnswers = new Counter({
    name: `${p}offline_answers_total`,
    help: 'Actions answered from the store because the task agent was offline, by action.',
    labelNames: ['action'] as const,
    registers,
  });
  for (const action of ACTIONS)
    if (action !== 'status' && action !== 'chat') offlineAnswers.inc({ action }, 0);
  const signIns = new Counter({
    name: `${p}sign_ins_total`,
    help: 'Sign-in attempts by outcome (success, bad_credentials, rate_limited, bad_request).',
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of SIGN_IN_OUTCOMES) signIns.inc({ outcome }, 0);
  const sessionsEnded = new Counter({
    name: `${p}sessions_ended_total`,
    help: 'Sessions ended, by reason (signed_out, expired, evicted, rotated).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of SESSION_ENDS) sessionsEnded.inc({ reason }, 0);
  const upstream = new Histogram({
    name: `${p}upstream_request_duration_seconds`,
    help: 'Calls to the task agent by operation and outcome (ok, client_error, upstream_error, unavailable, timeout, aborted).',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers,
  });
  return { actions, offlineAnswers, signIns, sessionsEnded, upstream };
}

/** What the proxy holds, read at each scrape: sessions, users, and whether the agent answers. */
export function registerTaskProxyGauges(
  kit: KitMetrics,
  parts: {
    sessions: { readonly size: number };
    users: { readonly size: number };
    monitor: { readonly status: AgentStatus };
  },
): void {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}sessions`,
    help: 'Signed-in sessions held in memory by this replica.',
    registers,
    collect() {
      this.set(parts.sessions.size);
    },
  });
  new Gauge({
    name: `${p}users`,
    help: 'Users who may sign in (users file and environment).',
    registers,
    collect() {
      this.set(parts.users.size);
    },
  });
  new Gauge({
    name: `${p}upstream_online`,
    help: '1 while the task agent answers its /health with 200, else 0.',
    registers,
    collect() {
      this.set(parts.monitor.status.state === 'online' ? 1 : 0);
    },
  });
}
