import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { ACTIONS } from '../schemas/actions.js';
import { HealthSchema, RootSchema } from '../schemas/api.js';
import { sendHome } from './login.js';
import { sessionOf, type ProxyRuntime } from './runtime.js';

/** `/` (service information; a small page for a browser) and `/health`. */

/** The proxy's title and description in its OpenAPI document. */
export const API_INFO = {
  title: 'ClinicalSuite task agent proxy',
  description:
    'A web-session-protected proxy in front of the task agent: sign in at /login.php (cookie PHPSESSID), ' +
    'then POST actions to /api/agent_proxy.php. While the agent is offline, tasks, logs, runs, stats, ' +
    'skills and schedules are answered from its store; tasks created then are queued there; chat needs ' +
    'the agent.',
} as const;

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'GET /': 'This information; a signed-in browser gets the task console',
  'GET /task.php?id=': 'A task’s page in the console (runs, logs)',
  'GET /login.php': 'The sign-in page',
  'POST /login.php': 'Sign in (username, password): session cookie PHPSESSID',
  'POST /logout.php': 'Sign out',
  'POST /api/agent_proxy.php': 'Task agent actions (field action), with a session',
  'GET /health': 'Health: the proxy, the task agent (online/offline) and the store offline answers come from',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation',
};

export function rootRoute(rt: ProxyRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information (a browser is shown the console, or sent to sign in)',
    tags: ['info'],
    response: RootSchema,
    handler: async ({ req, res, signal }) => {
      if (await sendHome(rt, req, res, signal)) return undefined;
      const session = sessionOf(rt, req);
      return {
        service: 'task-proxy' as const,
        version: rt.version,
        status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
        authenticated: session !== undefined,
        user: session?.user ?? null,
        endpoints: ENDPOINTS,
        actions: [...ACTIONS],
        docs: '/docs',
      };
    },
  });
}

export function healthRouteFor(rt: ProxyRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/health',
    summary: 'Health: 200 once the users are loaded; the agent’s state and the store in the body',
    description:
      'The proxy is healthy when it can sign users in. `agent.state` says whether the task agent answers ' +
      '(`offline` does not make the proxy unhealthy: it answers from the store); `store` is where offline ' +
      'answers come from and whether it answers.',
    tags: ['probes'],
    response: HealthSchema,
    responses: {
      503: { description: 'The users are not loaded (the reason says why)', schema: HealthSchema },
    },
    handler: async ({ res }) => {
      const { ready, reason } = rt.readiness;
      const agent = rt.monitor.status;
      const store = await rt.store.health();
      res.status(ready ? 200 : 503);
      return {
        status: ready ? ('healthy' as const) : ('unhealthy' as const),
        service: 'task-proxy' as const,
        version: rt.version,
        agent: {
          url: rt.agentUrl,
          state: agent.state,
          detail: agent.detail,
          checked_at: agent.checkedAt === null ? null : new Date(agent.checkedAt).toISOString(),
        },
        store,
        users: rt.users.size,
        sessions: rt.sessions.size,
        ...(ready || reason === undefined ? {} : { reason }),
      };
    },
  });
}
