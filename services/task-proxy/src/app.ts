import { createKit, createLogger, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { TaskStore } from '@clinicalsuite/task-agent/store';
import { AgentClient, agentClientOptions } from './adapters/agent-client.js';
import { AgentMonitor } from './adapters/agent-monitor.js';
import { sessionStoreOptions } from './adapters/session-options.js';
import { StoreHandle, storeHandleOptions } from './adapters/task-store.js';
import { UserDirectory, userDirectoryOptions, usersResource } from './adapters/users.js';
import type { TaskProxyConfig } from './config.js';
import { SessionStore } from './domain/sessions.js';
import { createTaskProxyMetrics, registerTaskProxyGauges } from './metrics.js';
import { consoleRoutes } from './routes/console.js';
import { API_INFO, healthRouteFor, rootRoute } from './routes/info.js';
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
 * The proxy's app, not listening; `serve(kit)` listens, then loads the users (ready once they are),
 * probes the agent and sweeps expired sessions.
 */
export function buildTaskProxyApp({ config, ...deps }: TaskProxyDeps): TaskProxyService {
  const now = deps.now ?? (() => Date.now());
  const kit = createKit({
    ...API_INFO,
    service: SERVICE,
    version: VERSION,
    config,
    logger: deps.logger ?? createLogger({ service: 'task-proxy', level: config.LOG_LEVEL }),
    // Behind a TLS-terminating proxy: req.secure and req.ip from its X-Forwarded-* headers.
    trustProxy: config.TRUST_PROXY,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const { logger } = kit;
  const metrics = createTaskProxyMetrics(kit.metrics);
  const users = new UserDirectory(userDirectoryOptions(config, deps.password));
  kit.resource(usersResource(users, config.TASK_PROXY_PROBE_MS));
  const agent = new AgentClient(agentClientOptions(config, kit.metrics, metrics.upstream));
  // The agent's state does not decide readiness: offline, the proxy answers from the store.
  const monitor = new AgentMonitor({ client: agent, logger, intervalMs: config.TASK_PROXY_PROBE_MS, now });
  kit.background('the agent monitor', monitor);
  // Opened on first use (and again after a failure), closed on shutdown.
  const store = new StoreHandle(storeHandleOptions(config, { logger, now, open: deps.openStore }));
  kit.own(store, (handle) => handle.close());
  const sessions = new SessionStore(sessionStoreOptions(config, metrics.sessionsEnded));
  kit.every('the session sweeper', Math.min(60_000, sessions.idleMs), () => sessions.sweep(now()));
  registerTaskProxyGauges(kit.metrics, { sessions, users, monitor });
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
      online: () => monitor.online(),
      markOffline: (detail) => monitor.markOffline(detail),
    },
    metrics,
    now,
    startedAt: now(),
  };
  const app = kit.mount([
    rootRoute(rt),
    healthRouteFor(rt),
    ...loginRoutes(rt),
    proxyRoute(rt),
    ...consoleRoutes(rt),
  ]);
  return { kit: app, sessions, users, monitor, agent, store };
}
