import { defineRoute, UnauthorizedError, type AnyRoute } from '@clinicalsuite/kit';
import { runAction } from '../domain/proxy.js';
import { actionLabel } from '../metrics.js';
import { outcomeOf } from './outcome.js';
import { parseAction } from '../schemas/actions.js';
import { ActionFieldsSchema, ActionResponseSchema } from '../schemas/api.js';
import { browserAnswer, browserError } from './console.js';
import { formBody, prefersHtml } from './http.js';
import { sessionOf, type ProxyRuntime } from './runtime.js';

/**
 * `POST /api/agent_proxy.php`: the spec's single path. Origin check, then the session (401 JSON
 * without one), then the action and its fields (400), then the agent or the store.
 */

export const SOURCE_HEADER = 'x-task-proxy-source';

export function proxyRoute(rt: ProxyRuntime): AnyRoute {
  const limits = {
    maxMessageChars: rt.config.TASK_PROXY_MAX_MESSAGE_CHARS,
    maxTitleChars: rt.config.TASK_PROXY_MAX_TITLE_CHARS,
    maxDescriptionChars: rt.config.TASK_PROXY_MAX_DESCRIPTION_CHARS,
  };
  return defineRoute({
    method: 'post',
    path: '/api/agent_proxy.php',
    summary: 'Every task agent action: form field `action` and its fields',
    description:
      'Needs a session (cookie PHPSESSID from POST /login.php). Fields as multipart/form-data, ' +
      'application/x-www-form-urlencoded or JSON. While the task agent is offline, reads are answered ' +
      'from its store with the same bodies, create_task is queued there (`queued: true`), cancel_task and ' +
      'clear_history are applied there, and chat answers 503. The `X-Task-Proxy-Source` header says ' +
      'who answered: agent, store or proxy.',
    tags: ['proxy'],
    bodyContentType: 'application/x-www-form-urlencoded',
    bodyParser: formBody({
      allowedOrigins: rt.config.TASK_PROXY_ALLOWED_ORIGINS,
      bodyLimit: rt.config.BODY_LIMIT,
    }),
    body: ActionFieldsSchema,
    response: ActionResponseSchema,
    responses: {
      400: { description: 'Unknown or missing action (the valid ones are listed), or a bad field' },
      401: { description: 'No valid session: sign in at /login.php' },
      403: { description: 'Cross-origin request refused' },
      404: { description: 'No such task' },
      409: { description: 'cancel_task: the task is already done, failed or cancelled' },
      502: { description: 'The task agent failed' },
      303: {
        description: 'A browser’s form: to the task’s page (create, cancel), the list (delete) or /login.php',
      },
      503: { description: 'chat while the agent is offline; offline without a store' },
      504: { description: 'The task agent did not answer in time (it stays online)' },
    },
    // The session and the action's fields are checked before readiness (401/400 while not ready too).
    requiresReady: 'in-handler',
    handler: async ({ req, res, signal, log, requireReady }) => {
      const fields = (req.body ?? {}) as Record<string, unknown>;
      const action = actionLabel(fields['action']);
      // A browser's form (the console's) gets redirects and pages; every other client JSON.
      const browser = prefersHtml(req);
      const session = sessionOf(rt, req);
      try {
        if (session === undefined) {
          if (browser) {
            res.redirect(303, '/login.php');
            return undefined;
          }
          throw new UnauthorizedError('No valid session: sign in at /login.php first (cookie PHPSESSID)');
        }
        const request = parseAction(fields, limits);
        requireReady();
        const answer = await runAction(request, rt.proxy, signal);
        res.setHeader(SOURCE_HEADER, answer.source);
        res.setHeader('cache-control', 'no-store');
        if (answer.source === 'store') rt.metrics.offlineAnswers.inc({ action });
        rt.metrics.actions.inc({ action, outcome: 'ok' });
        log.debug({ action, source: answer.source, user: session.user }, 'action answered');
        if (browser && browserAnswer(req, res, fields, answer, session.user)) return undefined;
        return answer.body;
      } catch (error) {
        if (signal.aborted) throw error;
        rt.metrics.actions.inc({ action, outcome: outcomeOf(error) });
        if (!browser) throw error;
        await browserError(rt, req, res, error, session?.user);
        return undefined;
      }
    },
  });
}
