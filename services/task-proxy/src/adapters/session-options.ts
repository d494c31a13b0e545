import { createHash, randomBytes } from 'node:crypto';
import type { TaskProxyConfig } from '../config.js';
import type { SessionStoreOptions } from '../domain/sessions.js';
import type { TaskProxyMetrics } from '../metrics.js';

/**
 * The configured session store (domain/sessions.ts): its limits, ids of 32 random bytes in
 * base64url (the cookie's value) kept only as their SHA-256, and every session's end counted in
 * `ended` by reason.
 */
export function sessionStoreOptions(
  config: TaskProxyConfig,
  ended: TaskProxyMetrics['sessionsEnded'],
): SessionStoreOptions {
  return {
    idleMs: config.TASK_PROXY_SESSION_IDLE_S * 1000,
    maxAgeMs: config.TASK_PROXY_SESSION_MAX_S * 1000,
    maxSessions: config.TASK_PROXY_MAX_SESSIONS,
    newId: () => randomBytes(32).toString('base64url'),
    digest: (id) => createHash('sha256').update(id).digest('base64url'),
    onEnd: (reason) => ended.inc({ reason }),
  };
}
