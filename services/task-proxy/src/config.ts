import { ConfigError, env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { z } from 'zod';

/**
 * The task proxy's configuration: the kit's variables and the proxy's own, parsed once at start-up;
 * a bad value stops the service with a message naming the variable. `TASK_PROXY_PASSWORD` is not
 * kept: `loadTaskProxyConfig` hands it to the caller separately, who hashes it and drops it.
 */

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** `TRUST_PROXY`: Express's `trust proxy` (true/false, a hop count, or addresses and subnets). */
const trustProxy = z.string().transform((s, ctx): boolean | number | string[] => {
  const v = s.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  if (/^hops?=\d+$/.test(v)) return Number(v.slice(v.indexOf('=') + 1));
  const list = s
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (
    list.length === 0 ||
    list.some((p) => !/^[0-9a-fA-F:.]+(\/\d{1,3})?$|^(loopback|linklocal|uniquelocal)$/.test(p))
  ) {
    ctx.addIssue({
      code: 'custom',
      message:
        'must be true, false, hops=<n>, or a comma-separated list of proxy addresses/subnets (10.0.0.0/8, loopback)',
    });
    return z.NEVER;
  }
  return list;
});

const origins = z.string().transform((s, ctx) => {
  const out: string[] = [];
  for (const part of s.split(',').map((p) => p.trim())) {
    if (part === '') continue;
    try {
      const url = new URL(part);
      if (
        (url.protocol !== 'http:' && url.protocol !== 'https:') ||
        url.pathname !== '/' ||
        url.search !== ''
      )
        throw new Error('not an origin');
      out.push(url.origin);
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: `"${part}" is not an origin such as https://clinic.example.org`,
      });
      return z.NEVER;
    }
  }
  return out;
});

export const taskProxyConfigSchema = kitConfigSchema({
  port: 8005,
  maxConcurrency: 32,
  queueSize: 128,
  queueTimeoutMs: 30_000,
  requestTimeoutMs: 180_000,
  bodyLimit: '256kb',
}).extend({
  /** The task agent's base URL. */
  TASK_AGENT_URL: env.url().default('http://127.0.0.1:8007'),
  /** Bearer token the agent's API wants (its TASK_AGENT_API_TOKEN). */
  TASK_AGENT_API_TOKEN: z.string().min(1).optional(),
  /** Deadline of the agent's quick calls (lists, task, stats, create, cancel), in ms. */
  TASK_AGENT_TIMEOUT_MS: env.int({ min: 100, max: 600_000 }).default(10_000),
  /** Deadline of a chat call (the agent waits on its LLM), in ms. */
  TASK_AGENT_CHAT_TIMEOUT_MS: env.int({ min: 100, max: 3_600_000 }).default(150_000),
  /** How often the agent's /health is probed, in ms. */
  TASK_PROXY_PROBE_MS: env.int({ min: 10, max: 600_000 }).default(5000),
  /** PostgreSQL URL of the agent's store (the agent's own DATABASE_URL), for offline answers. */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  /** The agent's SQLite file (its TASK_AGENT_DB), for offline answers; ignored with DATABASE_URL. */
  TASK_AGENT_DB: z.string().min(1).optional(),
  /** A file of `username:scrypt$…` lines (a mounted Secret); re-read when it changes. */
  TASK_PROXY_USERS_FILE: z.string().min(1).optional(),
  /** A user created at start from TASK_PROXY_PASSWORD (hashed at once; the plain text is dropped). */
  TASK_PROXY_USER: z.string().regex(USERNAME, 'letters, digits, ".", "_", "@", "-"; at most 64').optional(),
  /** A session unused this long ends, in seconds. */
  TASK_PROXY_SESSION_IDLE_S: env.int({ min: 10, max: 30 * 86_400 }).default(1800),
  /** A session ends this long after sign-in whatever its use, in seconds. */
  TASK_PROXY_SESSION_MAX_S: env.int({ min: 10, max: 90 * 86_400 }).default(43_200),
  /** Sessions held at once (per replica); past it the least recently used one ends. */
  TASK_PROXY_MAX_SESSIONS: env.int({ min: 1, max: 1_000_000 }).default(10_000),
  /** Origins besides the proxy's own allowed to POST (comma-separated, e.g. https://emr.example.org). */
  TASK_PROXY_ALLOWED_ORIGINS: origins.default([]),
  /** Behind a TLS-terminating proxy: trust its X-Forwarded-Proto/For (cookie Secure, client IP). */
  TRUST_PROXY: trustProxy.default(false),
  /** Failed sign-ins per username and client address within the window before 429. */
  TASK_PROXY_LOGIN_MAX_FAILURES: env.int({ min: 1, max: 10_000 }).default(5),
  /** Failed sign-ins per client address (any username) within the window before 429. */
  TASK_PROXY_LOGIN_MAX_FAILURES_PER_IP: env.int({ min: 1, max: 100_000 }).default(50),
  /** The sign-in rate limit's window, in seconds. */
  TASK_PROXY_LOGIN_WINDOW_S: env.int({ min: 1, max: 86_400 }).default(900),
  /** Password checks at once (scrypt takes memory and CPU); more wait. */
  TASK_PROXY_LOGIN_CONCURRENCY: env.int({ min: 1, max: 64 }).default(2),
  /** Longest chat message, in characters (keep in step with the agent's TASK_AGENT_MAX_MESSAGE_CHARS). */
  TASK_PROXY_MAX_MESSAGE_CHARS: env.int({ min: 1, max: 1_000_000 }).default(8000),
  /** Longest task title (the agent's TASK_AGENT_MAX_TITLE_CHARS): offline creations obey it too. */
  TASK_PROXY_MAX_TITLE_CHARS: env.int({ min: 1, max: 10_000 }).default(200),
  /** Longest task description (the agent's TASK_AGENT_MAX_DESCRIPTION_CHARS). */
  TASK_PROXY_MAX_DESCRIPTION_CHARS: env.int({ min: 1, max: 1_000_000 }).default(20_000),
});

export type TaskProxyConfig = z.output<typeof taskProxyConfigSchema>;

type Env = Readonly<Record<string, string | undefined>>;

export interface LoadedConfig {
  readonly config: TaskProxyConfig;
  /** TASK_PROXY_PASSWORD, for the caller to hash and forget (undefined when unset). */
  readonly password: string | undefined;
}

export function loadTaskProxyConfig(source: Env = process.env): LoadedConfig {
  const config = loadConfig(taskProxyConfigSchema, source);
  const password = source['TASK_PROXY_PASSWORD'];
  const hasPassword = password !== undefined && password !== '';
  const problems: string[] = [];
  if (config.TASK_PROXY_USER !== undefined && !hasPassword)
    problems.push('TASK_PROXY_PASSWORD: is required with TASK_PROXY_USER');
  if (hasPassword && config.TASK_PROXY_USER === undefined)
    problems.push('TASK_PROXY_USER: is required with TASK_PROXY_PASSWORD');
  if (config.TASK_PROXY_USERS_FILE === undefined && config.TASK_PROXY_USER === undefined && !hasPassword) {
    problems.push(
      'TASK_PROXY_USERS_FILE: set it (lines `username:<hash>`, see `node services/task-proxy/dist/hash-password.js`) ' +
        'or TASK_PROXY_USER and TASK_PROXY_PASSWORD: nobody could sign in',
    );
  }
  if (config.TASK_PROXY_SESSION_MAX_S < config.TASK_PROXY_SESSION_IDLE_S)
    problems.push('TASK_PROXY_SESSION_MAX_S: must be >= TASK_PROXY_SESSION_IDLE_S');
  if (problems.length > 0) throw new ConfigError(problems);
  return { config, password: hasPassword ? password : undefined };
}

/** Which store offline answers come from. */
export function storeKind(config: TaskProxyConfig): 'postgresql' | 'sqlite' | 'none' {
  if (config.DATABASE_URL !== undefined) return 'postgresql';
  return config.TASK_AGENT_DB === undefined ? 'none' : 'sqlite';
}
