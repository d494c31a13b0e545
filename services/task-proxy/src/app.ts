import { createHash, randomBytes } from 'node:crypto';
import { createKit, createLogger, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { TaskStore } from '@clinicalsuite/task-agent/store';
import { AgentClient } from './adapters/agent-client.js';
import { AgentMonitor } from './adapters/agent-monitor.js';
import { StoreHandle } from './adapters/task-store.js';
import { UserDirectory } from './adapters/users.js';
import type { TaskProxyConfig } from './config.js';
import { SessionStore } from './domain/sessions.js';
import { createTaskProxyMetrics } from './metrics.js';
import { healthRouteFor, rootRoute } from './routes/info.js';
import { loginRoutes, signInLimits } from './routes/login.js';
import { proxyRoute } from './routes/proxy.js';
import type { ProxyRuntime } from './routes/runtime.js';

export const SERVICE = 'task_proxy';
export const VERSION = '0.1.0';

export interface TaskProxyDeps {
  readonly config: TaskProxyConfig;
  /** TASK_PROXY_PASSWORD (for TASK_PROXY_USER): hashed when the users load, then dropped. */
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
}

/**
 * Builds the proxy's app; nothing is read, probed or opened until `serve()` starts it: then the
 * users load (hashing TASK_PROXY_PASSWORD), which makes the proxy ready (a users file that cannot
 * be read leaves it not ready with the reason, tried again every probe interval), the agent is
 * probed and expired sessions are swept.
 */
export function buildTaskProxyApp(deps: TaskProxyDeps): TaskProxyService {
  const { config } = deps;
  const now = deps.now ?? (() => Date.now());
  const kit = createKit({
    service: SERVICE,
    title: 'ClinicalSuite task agent proxy',
    version: VERSION,
    description:
      'A web-session-protected proxy in front of the task agent: sign in at /login.php (cookie PHPSESSID), ' +
      'then POST actions to /api/agent_proxy.php. While the agent is offline, tasks, logs, runs, stats, ' +
      'skills and schedules are answered from its store; tasks created then are queued there; chat needs ' +
      'the agent.',
    config,
    logger: deps.logger ?? createLogger({ service: 'task-proxy', level: config.LOG_LEVEL }),
    ...(deps.gpu === undefined ? {} : { gpu: deps.gpu }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
  });
  const { logger } = kit;
  const users = new UserDirectory({
    file: config.TASK_PROXY_USERS_FILE,
    envUser:
      config.TASK_PROXY_USER === undefined || deps.password === undefined
        ? undefined
        : { username: config.TASK_PROXY_USER, password: deps.password },
  });
  const probeMs = config.TASK_PROXY_PROBE_MS;
  kit.resource({
    name: 'the users',
    startingReason: 'starting: the users have not been loaded yet',
    open: async () => {
      await users.load();
      return users;
    },
    retry: { firstPauseMs: probeMs, maxPauseMs: probeMs },
    failureReason: (error) => `users not loaded: ${error.message}`,
    describe: (loaded) => ({ fields: { users: loaded.size } }),
  });
  const sessions = new SessionStore({
    idleMs: config.TASK_PROXY_SESSION_IDLE_S * 1000,
    maxAgeMs: config.TASK_PROXY_SESSION_MAX_S * 1000,
    maxSessions: config.TASK_PROXY_MAX_SESSIONS,
    newId: () => randomBytes(32).toString('base64url'),
    digest: (id) => createHash('sha256').update(id).digest('base64url'),
    onEnd: (reason) => metrics.sessionsEnded.inc({ reason }),
  });
  const agent = new AgentClient({
    baseUrl: config.TASK_AGENT_URL,
    metrics: kit.metrics,
    token: config.TASK_AGENT_API_TOKEN,
    timeoutMs: config.TASK_AGENT_TIMEOUT_MS,
    chatTimeoutMs: config.TASK_AGENT_CHAT_TIMEOUT_MS,
    onCall: (operation, outcome, seconds) => metrics.upstream.observe({ operation, outcome }, seconds),
  });
  // The agent's state does not decide readiness: offline, the proxy answers from the store.
  const monitor = new AgentMonitor({ client: agent, logger, intervalMs: probeMs, now });
  kit.resource({
    name: 'the agent monitor',
    open: () => {
      monitor.start();
      return monitor;
    },
    close: (m) => m.stop(),
  });
  // Opened on first use (and again after a failure), closed on shutdown.
  const store = kit.own(
    new StoreHandle({
      databaseUrl: config.DATABASE_URL,
      sqlitePath: config.TASK_AGENT_DB,
      logger,
      now,
      ...(deps.openStore === undefined ? {} : { open: deps.openStore }),
    }),
    (handle) => handle.close(),
  );
  const metrics = createTaskProxyMetrics(kit.metrics, {
    sessions: () => sessions.size,
    users: () => users.size,
    agentOnline: () => monitor.status.state === 'online',
  });
  kit.resource({
    name: 'the session sweeper',
    open: () =>
      setInterval(
        () => sessions.sweep(now()),
        Math.min(60_000, config.TASK_PROXY_SESSION_IDLE_S * 1000),
      ).unref(),
    close: (sweeper) => clearInterval(sweeper),
  });
  const rt: ProxyRuntime = {
    config,
    version: VERSION,
    readiness: kit.readiness,
    sessions,
    users,
    ...signInLimits(config),
    monitor,
    agentUrl: agent.displayUrl,
    store,
    proxy: {
      agent,
      store: store.backend(),
      online: async () => {
        const s = await monitor.current();
        return { online: s.state === 'online', detail: s.detail };
      },
      markOffline: (detail) => monitor.markOffline(detail),
    },
    metrics,
    now,
    startedAt: now(),
  };
  const app = kit.mount([rootRoute(rt), healthRouteFor(rt), ...loginRoutes(rt), proxyRoute(rt)]);
  // Behind a TLS-terminating proxy: req.secure and req.ip from its X-Forwarded-* headers.
  app.app.set('trust proxy', config.TRUST_PROXY);
  return { kit: app, sessions, users, monitor, agent, store };
}
