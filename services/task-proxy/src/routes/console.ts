import { defineRoute, toHttpError, type AnyRoute } from '@clinicalsuite/kit';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { CLIENT_SCRIPT } from '../console/client.js';
import { chooseLang, translator, type Lang } from '../console/i18n.js';
import {
  chatView,
  consoleView,
  context,
  errorView,
  PAGE_SIZE,
  taskView,
  type PageContext,
  type Task,
  type TaskStats,
  type TaskView,
} from '../console/views.js';
import { runAction, type ActionAnswer } from '../domain/proxy.js';
import { actionLabel } from '../metrics.js';
import { LIMITS, parseAction, type FieldLimits } from '../schemas/actions.js';
import { cookieValues } from './http.js';
import { sendHtml } from './pages.js';
import { sessionOf, type ProxyRuntime } from './runtime.js';
import { outcomeOf } from './outcome.js';

/**
 * The console (README, "The console"): `/` and `/task.php` for a signed-in browser, rendered on the
 * server from the same actions `POST /api/agent_proxy.php` runs, and `/console.js`. Its forms post
 * to `/api/agent_proxy.php`, which answers a browser's form with a redirect or a page
 * ({@link browserAnswer}).
 */

export const LANG_COOKIE = 'lang';

/** A checked task on the console's blue. */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#12355f"/>' +
  '<path d="M9 16.5l4.5 4.5L23 11" fill="none" stroke="#fff" stroke-width="3.5" stroke-linecap="round" stroke-linejoin="round"/></svg>';

export function fieldLimits(rt: ProxyRuntime): FieldLimits {
  return {
    maxMessageChars: rt.config.TASK_PROXY_MAX_MESSAGE_CHARS,
    maxTitleChars: rt.config.TASK_PROXY_MAX_TITLE_CHARS,
    maxDescriptionChars: rt.config.TASK_PROXY_MAX_DESCRIPTION_CHARS,
  };
}

/** The page's language; a `lang` in the query (the switch) is kept in a cookie. */
export function pageLang(req: Request, res: Response): Lang {
  const query = typeof req.query['lang'] === 'string' ? req.query['lang'] : undefined;
  const lang = chooseLang(query, cookieValues(req, LANG_COOKIE)[0], req.headers['accept-language']);
  if (query === lang)
    res.append(
      'set-cookie',
      `${LANG_COOKIE}=${lang}; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000${req.secure ? '; Secure' : ''}`,
    );
  return lang;
}

/** The request's path and query without `lang`, for the language switch. */
function pathWithoutLang(req: Request): string {
  const url = new URL(req.originalUrl, 'http://x');
  url.searchParams.delete('lang');
  return `${url.pathname}${url.search}`;
}

export function pageContext(req: Request, res: Response, offline: boolean, user?: string): PageContext {
  return context(pageLang(req, res), pathWithoutLang(req), offline, user);
}

/** One action as the API runs it, counted alike. */
async function act(
  rt: ProxyRuntime,
  fields: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ActionAnswer> {
  const action = actionLabel(fields['action']);
  try {
    const answer = await runAction(parseAction(fields, fieldLimits(rt)), rt.proxy, signal);
    if (answer.source === 'store') rt.metrics.offlineAnswers.inc({ action });
    rt.metrics.actions.inc({ action, outcome: 'ok' });
    return answer;
  } catch (error) {
    if (!signal.aborted) rt.metrics.actions.inc({ action, outcome: outcomeOf(error) });
    throw error;
  }
}

async function isOffline(rt: ProxyRuntime): Promise<boolean> {
  return !(await rt.proxy.online()).online;
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function queryText(req: Request, name: string): string | undefined {
  const value = req.query[name];
  return typeof value === 'string' ? value : undefined;
}

/** `created=7`-style notices after a form's redirect (digits only). */
function notice(req: Request, lang: Lang, id: number): string | undefined {
  const t = translator(lang);
  if (queryText(req, 'created') === '1') return t('created_ok', { id });
  if (queryText(req, 'queued') === '1') return t('queued_ok', { id });
  if (queryText(req, 'cancelled') === '1') return t('cancelled_ok', { id });
  return undefined;
}

function sendError(res: Response, ctx: PageContext, error: unknown, taskId?: number): void {
  const http = toHttpError(error);
  sendHtml(res, http.status, errorView(ctx, http.status, http.message, taskId));
}

/** `/` for a browser: the console, or the way to the sign-in page. */
export async function sendConsole(
  rt: ProxyRuntime,
  req: Request,
  res: Response,
  signal: AbortSignal,
): Promise<void> {
  const session = sessionOf(rt, req);
  if (session === undefined) {
    res.redirect(303, '/login.php');
    return;
  }
  res.setHeader('cache-control', 'no-store');
  const status = queryText(req, 'status') ?? 'all';
  const maxPage = Math.floor(LIMITS.list_tasks.max / PAGE_SIZE);
  const pageParam = Number(queryText(req, 'page') ?? '1');
  const page = Number.isInteger(pageParam) && pageParam >= 1 ? Math.min(pageParam, maxPage) : 1;
  // The list has no offset: page n asks for its rows and the ones before, and one more to know
  // whether a next page exists (at most the action's maximum).
  const limit = Math.min(page * PAGE_SIZE + 1, LIMITS.list_tasks.max);
  let ctx = pageContext(req, res, await isOffline(rt), session.user);
  try {
    const fields = { action: 'list_tasks', status, limit };
    const request = parseAction(fields, fieldLimits(rt));
    const list = await act(rt, fields, signal);
    const stats = await act(rt, { action: 'get_stats' }, signal).then(
      (a) => (a.body as { stats: TaskStats }).stats,
      () => undefined,
    );
    const offline = list.source === 'store' || (await isOffline(rt));
    ctx = { ...ctx, offline };
    const tasks = (list.body as { tasks: Task[] }).tasks;
    sendHtml(
      res,
      200,
      consoleView(ctx, {
        tasks: tasks.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE),
        stats,
        status: request.action === 'list_tasks' ? request.status : undefined,
        page,
        hasNext: tasks.length > page * PAGE_SIZE && page < maxPage,
        online: !offline,
      }),
    );
  } catch (error) {
    if (signal.aborted) throw error;
    sendError(res, ctx, error);
  }
}

/** An HTML page, as OpenAPI documents a body of that media type. */
const HTML = z.string();

export function consoleRoutes(rt: ProxyRuntime): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/task.php',
      summary: 'A task’s page in the console: its runs and logs (HTML; sign in first)',
      tags: ['console'],
      responses: {
        200: { description: 'HTML page', contentType: 'text/html' },
        303: { description: 'No session: redirected to /login.php' },
        // The page is the error's body: HTML, not the error catalogue's JSON.
        400: {
          description: 'No task id, or not a task id (HTML page)',
          contentType: 'text/html',
          schema: HTML,
        },
        404: { description: 'No such task (HTML page)', contentType: 'text/html', schema: HTML },
      },
      handler: async ({ req, res, signal }) => {
        const session = sessionOf(rt, req);
        if (session === undefined) {
          res.redirect(303, '/login.php');
          return undefined;
        }
        res.setHeader('cache-control', 'no-store');
        let ctx = pageContext(req, res, await isOffline(rt), session.user);
        try {
          const answer = await act(rt, { action: 'get_task', task_id: queryText(req, 'id') }, signal);
          const detail = answer.body as Omit<TaskView, 'notice'>;
          ctx = { ...ctx, offline: answer.source === 'store' || (await isOffline(rt)) };
          sendHtml(res, 200, taskView(ctx, { ...detail, notice: notice(req, ctx.lang, detail.task.id) }));
        } catch (error) {
          if (signal.aborted) throw error;
          sendError(res, ctx, error);
        }
        return undefined;
      },
    }),
    ...['/favicon.svg', '/favicon.ico'].map((iconPath) =>
      defineRoute({
        method: 'get',
        path: iconPath,
        summary: 'The console’s icon',
        tags: ['console'],
        responses: { 200: { description: 'SVG image', contentType: 'image/svg+xml' } },
        handler: ({ res }) => {
          res.status(200);
          res.setHeader('content-type', 'image/svg+xml');
          res.setHeader('x-content-type-options', 'nosniff');
          res.setHeader('cache-control', 'max-age=86400');
          res.send(FAVICON);
          return undefined;
        },
      }),
    ),
    defineRoute({
      method: 'get',
      path: '/console.js',
      summary: 'The console’s script (the pages work without it)',
      tags: ['console'],
      responses: { 200: { description: 'JavaScript', contentType: 'text/javascript' } },
      handler: ({ res }) => {
        res.status(200);
        res.setHeader('content-type', 'text/javascript; charset=utf-8');
        res.setHeader('x-content-type-options', 'nosniff');
        res.setHeader('cache-control', 'no-cache');
        res.send(CLIENT_SCRIPT);
        return undefined;
      },
    }),
  ];
}

/**
 * A browser's form posted to `/api/agent_proxy.php` (Accept prefers HTML) after its action ran:
 * create and cancel go to the task's page, delete to the list, chat shows the answer. False for
 * the other actions (they answer JSON, as to any client).
 */
export function browserAnswer(
  req: Request,
  res: Response,
  fields: Record<string, unknown>,
  answer: ActionAnswer,
  user: string,
): boolean {
  const body = answer.body as Record<string, unknown>;
  switch (fields['action']) {
    case 'create_task':
      res.redirect(
        303,
        `/task.php?id=${Number(body['id'])}&${body['queued'] === true ? 'queued' : 'created'}=1`,
      );
      return true;
    case 'cancel_task':
      res.redirect(303, `/task.php?id=${Number(fields['task_id'])}&cancelled=1`);
      return true;
    case 'delete_task':
      res.redirect(303, '/');
      return true;
    case 'chat': {
      const ctx = pageContext(req, res, answer.source === 'store', user);
      sendHtml(
        res,
        200,
        chatView(ctx, {
          message: asText(fields['message']),
          response: asText(body['response']),
          sessionId: asText(body['session_id']),
        }),
      );
      return true;
    }
    default:
      return false;
  }
}

/** An action a browser's form posted failed: the message on a page, with the way back. */
export async function browserError(
  rt: ProxyRuntime,
  req: Request,
  res: Response,
  error: unknown,
  user: string | undefined,
): Promise<void> {
  const fields = (req.body ?? {}) as Record<string, unknown>;
  const id = Number(fields['task_id']);
  sendError(
    res,
    pageContext(req, res, await isOffline(rt), user),
    error,
    Number.isSafeInteger(id) && id > 0 ? id : undefined,
  );
}
