import { defineRoute, toHttpError, UnauthorizedError, type AnyRoute } from '@clinicalsuite/kit';
import { runAction } from '../domain/proxy.js';
import { actionLabel, type ActionOutcome } from '../metrics.js';
import { parseAction } from '../schemas/actions.js';
import { ActionFieldsSchema, ActionResponseSchema } from '../schemas/api.js';
import { formBody } from './http.js';
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
      503: { description: 'chat while the agent is offline; offline without a store' },
      504: { description: 'The task agent did not answer in time (it stays online)' },
    },
    // The session and the action's fields are checked before readiness (401/400 while not ready too).
    requiresReady: 'in-handler',
    handler: async ({ req, res, signal, log, requireReady }) => {
      const fields = (req.body ?? {}) as Record<string, unknown>;
      const action = actionLabel(fields['action']);
      try {
        const session = sessionOf(rt, req);
        if (session === undefined)
          throw new UnauthorizedError('No valid session: sign in at /login.php first (cookie PHPSESSID)');
        const request = parseAction(fields, limits);
        requireReady();
        const answer = await runAction(request, rt.proxy, signal);
        res.setHeader(SOURCE_HEADER, answer.source);
        res.setHeader('cache-control', 'no-store');
        if (answer.source === 'store') rt.metrics.offlineAnswers.inc({ action });
        rt.metrics.actions.inc({ action, outcome: 'ok' });
        log.debug({ action, source: answer.source, user: session.user }, 'action answered');
        return answer.body;
      } catch (error) {
        if (!signal.aborted) rt.metrics.actions.inc({ action, outcome: outcomeOf(error) });
        throw error;
      }
    },
  });
}

function outcomeOf(error: unknown): ActionOutcome {
  const status = toHttpError(error).status;
  switch (status) {
    case 400:
    case 413:
    case 415:
    case 422:
      return 'bad_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 409:
      return 'conflict';
    case 503:
      return 'unavailable';
    case 502:
    case 504:
      return 'upstream_error';
    default:
      return 'error';
  }
}
