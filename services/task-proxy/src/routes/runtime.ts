import type { ConcurrencyGate, Readiness } from '@clinicalsuite/kit';
import type { Request } from 'express';
import type { AgentMonitor } from '../adapters/agent-monitor.js';
import type { StoreHandle } from '../adapters/task-store.js';
import type { UserDirectory } from '../adapters/users.js';
import type { TaskProxyConfig } from '../config.js';
import type { ProxyDeps } from '../domain/proxy.js';
import type { FailureWindow } from '../domain/rate-limit.js';
import type { Session, SessionStore } from '../domain/sessions.js';
import type { TaskProxyMetrics } from '../metrics.js';
import { cookieValues } from './http.js';

/** What the routes share. */
export interface ProxyRuntime {
  readonly config: TaskProxyConfig;
  readonly version: string;
  readonly readiness: Readiness;
  readonly sessions: SessionStore;
  readonly users: UserDirectory;
  /** Failed sign-ins per username + `req.ip`. */
  readonly failuresPerUser: FailureWindow;
  /** Failed sign-ins per client address (domain/client-address.ts). */
  readonly failuresPerAddress: FailureWindow;
  /** Warnings logged once per process. */
  readonly warned: { untrustedProxy: boolean };
  /** Password checks at once. */
  readonly loginGate: ConcurrencyGate;
  readonly monitor: AgentMonitor;
  readonly agentUrl: string;
  readonly store: StoreHandle;
  readonly proxy: ProxyDeps;
  readonly metrics: TaskProxyMetrics;
  /** Epoch ms. */
  readonly now: () => number;
  readonly startedAt: number;
}

/** The request's live session (from any of its PHPSESSID cookies), or undefined. */
export function sessionOf(rt: ProxyRuntime, req: Request): Session | undefined {
  const now = rt.now();
  for (const id of cookieValues(req)) {
    const session = rt.sessions.get(id, now);
    if (session !== undefined) return session;
  }
  return undefined;
}
