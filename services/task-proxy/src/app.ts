import { createHash, randomBytes } from 'node:crypto';
import {
  buildApp,
  ConcurrencyGate,
  createLogger,
  Readiness,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { AgentClient } from './adapters/agent-client.js';
import { AgentMonitor } from './adapters/agent-monitor.js';
import { StoreHandle } from './adapters/task-store.js';
import { UserDirectory } from './adapters/users.js';
import type { TaskProxyConfig } from './config.js';
import type { ProxyDeps } from './domain/proxy.js';
import { FailureWindow } from './domain/rate-limit.js';
import { SessionStore } from './domain/sessions.js';
import { createTaskProxyMetrics } from './metrics.js';
import { healthRouteFor, rootRoute } from './routes/info.js';
import { loginRoutes } from './routes/login.js';
import { proxyRoute } from './routes/proxy.js';
import type { ProxyRuntime } from './routes/runtime.js';
import type { TaskStore } from '@clinicalsuite/task-agent/store';

export const SERVICE = 'task_proxy';
export const VERSION = '0.1.0';

export interface TaskProxyDeps {
  readonly config: TaskProxyConfig;
  /** TASK_PROXY_PASSWORD (for TASK_PROXY_USER): hashed by `start()`, then dropped. */
  readonly password?: string | undefined;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  /** Epoch ms. */
  readonly now?: () => number;
  readonly processMetrics?: boolean;
  /** Opens the agent's store (default: the agent's openTaskStore on the configured database). */
  readonly openStore?: () => Promise<TaskStore>;
}

export interface TaskProxyService {
  readonly kit: KitApp;
  readonly sessions: SessionStore;
  readonly users: UserDirectory;
  readonly monitor: AgentMonitor;
  readonly agent: AgentClient;
  readonly store: StoreHandle;
  /**
   * Loads the users (hashing TASK_PROXY_PASSWORD), then marks the proxy ready; starts probing the
   * agent and sweeping expired sessions. Call after listening. A users file that cannot be read
   * leaves the proxy not ready with the reason, and is tried again every probe interval.
   */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** Builds the proxy's app; nothing is read, probed or opened until `start()`. */
export function buildTaskProxyApp(deps: TaskProxyDeps): TaskProxyService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'task-proxy', level: config.LOG_LEVEL });
  const now = deps.now ?? (() => Date.now());
  const readiness = new Readiness('starting: the users have not been loaded yet');
  const users = new UserDirectory({
    file: config.TASK_PROXY_USERS_FILE,
    envUser:
      config.TASK_PROXY_USER === undefined || deps.password === undefined
        ? undefined
        : { username: config.TASK_PROXY_USER, password: deps.password },
  });
  let onSessionEnd: (reason: string) => void = () => undefined;
  const sessions = new SessionStore({
    idleMs: config.TASK_PROXY_SESSION_IDLE_S * 1000,
    maxAgeMs: config.TASK_PROXY_SESSION_MAX_S * 1000,
    maxSessions: config.TASK_PROXY_MAX_SESSIONS,
    newId: () => randomBytes(32).toString('base64url'),
    digest: (id) => createHash('sha256').update(id).digest('base64url'),
    onEnd: (reason) => onSessionEnd(reason),
  });
  let onCall: (operation: string, outcome: string, seconds: number) => void = () => undefined;
  const agent = new AgentClient({
    baseUrl: config.TASK_AGENT_URL,
    token: config.TASK_AGENT_API_TOKEN,
    timeoutMs: config.TASK_AGENT_TIMEOUT_MS,
    chatTimeoutMs: config.TASK_AGENT_CHAT_TIMEOUT_MS,
    onCall: (operation, outcome, seconds) => onCall(operation, outcome, seconds),
  });
  const monitor = new AgentMonitor({ client: agent, logger, intervalMs: config.TASK_PROXY_PROBE_MS, now });
  const store = new StoreHandle({
    databaseUrl: config.DATABASE_URL,
    sqlitePath: config.TASK_AGENT_DB,
    logger,
    now,
    ...(deps.openStore === undefined ? {} : { open: deps.openStore }),
  });
  const windowMs = config.TASK_PROXY_LOGIN_WINDOW_S * 1000;
  const proxy: ProxyDeps = {
    agent,
    store: store.backend(),
    online: async () => {
      const s = await monitor.current();
      return { online: s.state === 'online', detail: s.detail };
    },
    markOffline: (detail) => monitor.markOffline(detail),
  };
  const startedAt = now();
  const kit = buildApp({
    service: SERVICE,
    title: 'ClinicalSuite task agent proxy',
    version: VERSION,
    description:
      'A web-session-protected proxy in front of the task agent: sign in at /login.php (cookie PHPSESSID), ' +
      'then POST actions to /api/agent_proxy.php. While the agent is offline, tasks, logs, runs, stats, ' +
      'skills and schedules are answered from its store; tasks created then are queued there; chat needs ' +
      'the agent.',
    config,
    logger,
    readiness,
    ...(deps.gpu === undefined ? {} : { gpu: deps.gpu }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ metrics: kitMetrics }) => {
      const metrics = createTaskProxyMetrics(kitMetrics, {
        sessions: () => sessions.size,
        users: () => users.size,
        agentOnline: () => monitor.status.state === 'online',
      });
      onSessionEnd = (reason) => metrics.sessionsEnded.inc({ reason });
      onCall = (operation, outcome, seconds) => metrics.upstream.observe({ operation, outcome }, seconds);
      const rt: ProxyRuntime = {
        config,
        version: VERSION,
        readiness,
        sessions,
        users,
        failuresPerUser: new FailureWindow({
          maxFailures: config.TASK_PROXY_LOGIN_MAX_FAILURES,
          windowMs,
          maxKeys: 100_000,
        }),
        failuresPerAddress: new FailureWindow({
          maxFailures: config.TASK_PROXY_LOGIN_MAX_FAILURES_PER_IP,
          windowMs,
          maxKeys: 100_000,
        }),
        warned: { untrustedProxy: false },
        loginGate: new ConcurrencyGate({
          limit: config.TASK_PROXY_LOGIN_CONCURRENCY,
          queueSize: 64,
          maxWaitMs: 10_000,
        }),
        monitor,
        agentUrl: agent.displayUrl,
        store,
        proxy,
        metrics,
        now,
        startedAt,
      };
      return [rootRoute(rt), healthRouteFor(rt), ...loginRoutes(rt), proxyRoute(rt)];
    },
  });
  // Behind a TLS-terminating proxy: req.secure and req.ip from its X-Forwarded-* headers.
  kit.app.set('trust proxy', config.TRUST_PROXY);

  let sweeper: NodeJS.Timeout | undefined;
  let usersRetry: NodeJS.Timeout | undefined;
  let closed = false;
  const loadUsers = async (): Promise<void> => {
    try {
      await users.load();
      if (closed) return;
      readiness.setReady();
      logger.info({ users: users.size }, 'users loaded');
    } catch (error) {
      const reason = `users not loaded: ${error instanceof Error ? error.message : String(error)}`;
      readiness.setNotReady(reason);
      logger.error({ err: error }, 'users not loaded; trying again');
      if (!closed) {
        usersRetry = setTimeout(() => void loadUsers(), config.TASK_PROXY_PROBE_MS);
        usersRetry.unref();
      }
    }
  };
  return {
    kit,
    sessions,
    users,
    monitor,
    agent,
    store,
    start: async () => {
      monitor.start();
      sweeper = setInterval(
        () => sessions.sweep(now()),
        Math.min(60_000, config.TASK_PROXY_SESSION_IDLE_S * 1000),
      );
      sweeper.unref();
      await loadUsers();
    },
    close: async () => {
      closed = true;
      monitor.stop();
      if (sweeper !== undefined) clearInterval(sweeper);
      if (usersRetry !== undefined) clearTimeout(usersRetry);
      await store.close();
    },
  };
}
