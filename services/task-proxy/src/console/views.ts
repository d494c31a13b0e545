import { createHash } from 'node:crypto';
import type { StatsBody, TaskDetailBody } from '@clinicalsuite/task-agent/store';
import { Html, markup } from './html.js';
import { formatTime, translator, type Lang, type MessageKey, type Translate } from './i18n.js';

/**
 * The console's pages (docs: services/task-proxy/README.md, "The console"): the sign-in form, the
 * task list with its forms, a task's page, a chat answer and an error page. Built with `markup`
 * (every value escaped). No inline script and no external asset: one stylesheet inline, allowed
 * by its hash in the CSP, and the console's own script from `/console.js` ('self').
 */

export type Task = TaskDetailBody['task'];
export type Run = TaskDetailBody['runs'][number];
export type TaskLog = TaskDetailBody['logs'][number];
export type TaskStats = StatsBody['stats'];
/** The spec's status groups, by their stored name (the agent's domain/types.ts). */
export const TASK_STATUSES: readonly Task['status'][] = ['pending', 'running', 'done', 'failed', 'cancelled'];

const STYLE = [
  ':root{--ink:#1b1f24;--muted:#4a5563;--line:#c9d1da;--bg:#f4f6f8;--card:#fff;--accent:#1a5bb8;--focus:#b3540b}',
  '*{box-sizing:border-box}',
  'body{font-family:system-ui,"Segoe UI",Roboto,"Noto Sans",sans-serif;margin:0;background:var(--bg);color:var(--ink);line-height:1.45}',
  'a{color:var(--accent)}',
  'a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,main:focus-visible{outline:3px solid var(--focus);outline-offset:2px}',
  '.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem}',
  '.skip:focus{left:.5rem}',
  'header.bar{display:flex;flex-wrap:wrap;gap:1rem;align-items:center;justify-content:space-between;padding:.6rem 1.2rem;background:#12355f;color:#fff}',
  'header.bar a{color:#fff}',
  '.brand{font-weight:700;font-size:1.1rem;text-decoration:none}',
  '.who{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}',
  '.who form{margin:0}',
  '.bar button{background:#fff;color:#12355f;border:0;border-radius:.3rem;padding:.35rem .8rem;font:inherit;cursor:pointer}',
  '.banner{margin:0;padding:.7rem 1.2rem;background:#fff4ce;color:#4d3800;border-bottom:2px solid #c99700;font-weight:600}',
  '.banner[hidden]{display:none}',
  'main{max-width:72rem;margin:1.2rem auto;padding:0 1rem}',
  '.narrow{max-width:24rem;margin:12vh auto;padding:2rem;background:var(--card);border-radius:.5rem;box-shadow:0 1px 4px #0003}',
  'h1{font-size:1.5rem;margin:.2rem 0 1rem}',
  'h2{font-size:1.15rem;margin:0 0 .8rem}',
  '.grid{display:grid;grid-template-columns:minmax(0,2fr) minmax(16rem,1fr);gap:1.2rem;align-items:start}',
  '@media (max-width:52rem){.grid{grid-template-columns:1fr}}',
  'section.card{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:1rem 1.2rem;margin-bottom:1.2rem}',
  'label{display:block;margin:.7rem 0 .25rem;font-weight:600}',
  '.hint{color:var(--muted);font-size:.9rem;margin:.1rem 0 .3rem}',
  'input,select,textarea{width:100%;padding:.5rem;font:inherit;border:1px solid #6b7785;border-radius:.3rem;background:#fff;color:var(--ink)}',
  'textarea{min-height:5rem;resize:vertical}',
  'button{font:inherit;cursor:pointer}',
  '.primary{margin-top:.9rem;padding:.5rem 1rem;border:0;border-radius:.3rem;background:var(--accent);color:#fff}',
  '.narrow .primary{width:100%}',
  '.danger{padding:.3rem .7rem;border:1px solid #a4161a;border-radius:.3rem;background:#fff;color:#a4161a}',
  '.filters{display:flex;gap:.6rem;align-items:end;flex-wrap:wrap;margin-bottom:.8rem}',
  '.filters label{margin:0 0 .25rem}',
  '.filters select{width:auto;min-width:14rem}',
  '.filters button{padding:.5rem 1rem;border:1px solid var(--accent);border-radius:.3rem;background:#fff;color:var(--accent)}',
  'table{width:100%;border-collapse:collapse;font-size:.95rem}',
  'caption{text-align:left;color:var(--muted);padding-bottom:.4rem}',
  'th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}',
  'th{background:#eef2f6}',
  'td form{margin:0}',
  '.badge{display:inline-block;padding:.1rem .55rem;border-radius:1rem;font-size:.85rem;font-weight:600;border:1px solid}',
  '.s-pending{background:#eef2f6;color:#2f3b48;border-color:#8795a6}',
  '.s-running{background:#e3efff;color:#0d4596;border-color:#1a5bb8}',
  '.s-done{background:#e3f5e8;color:#14532d;border-color:#2f855a}',
  '.s-failed{background:#fdecec;color:#8a1116;border-color:#a4161a}',
  '.s-cancelled{background:#f3eefa;color:#4c2a85;border-color:#6b46a8}',
  '.pager{display:flex;gap:1rem;align-items:center;margin-top:.8rem}',
  '.notice{padding:.6rem .8rem;border-radius:.3rem;background:#e3f5e8;color:#14532d;margin:0 0 1rem}',
  '.error{padding:.6rem .8rem;border-radius:.3rem;background:#fdecec;color:#8a1116;margin:0 0 1rem}',
  'dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:0}',
  'dl.facts dt{font-weight:600;color:var(--muted)}',
  'dl.facts dd{margin:0}',
  '.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}',
  'ol.logs{list-style:none;margin:0;padding:0;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.88rem;max-height:28rem;overflow:auto}',
  'ol.logs li{display:grid;grid-template-columns:max-content max-content 1fr;gap:.8rem;padding:.25rem 0;border-bottom:1px solid #e3e8ee}',
  '.l-warn{color:#7a4d00;font-weight:600}',
  '.l-error{color:#8a1116;font-weight:600}',
  '.muted{color:var(--muted)}',
  '.chatlog{margin:0 0 .5rem;padding:0;list-style:none}',
  '.chatlog li{padding:.4rem .6rem;border-radius:.3rem;margin:.3rem 0;background:#eef2f6;white-space:pre-wrap;overflow-wrap:anywhere}',
  '.chatlog li.agent{background:#e3efff}',
  '.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}',
].join('');

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/** The pages' Content-Security-Policy: nothing but this origin's script and the hashed style. */
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  `style-src 'sha256-${STYLE_HASH}'`,
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export interface PageContext {
  readonly lang: Lang;
  readonly t: Translate;
  /** The signed-in user; undefined on the sign-in page. */
  readonly user?: string | undefined;
  /** The path and query of this page without `lang` (for the language switch). */
  readonly path: string;
  /** Whether the task agent is offline (the banner shows). */
  readonly offline: boolean;
}

export function context(lang: Lang, path: string, offline: boolean, user?: string): PageContext {
  return { lang, t: translator(lang), user, path, offline };
}

function switchHref(ctx: PageContext): string {
  const other = ctx.lang === 'en' ? 'vi' : 'en';
  return `${ctx.path}${ctx.path.includes('?') ? '&' : '?'}lang=${other}`;
}

function layout(ctx: PageContext, title: string, body: Html, options: { narrow?: boolean } = {}): Html {
  const { t } = ctx;
  const other = ctx.lang === 'en' ? 'vi' : 'en';
  const signedIn =
    ctx.user === undefined
      ? ''
      : markup`
<span>${t('signedInAs')} <strong>${ctx.user}</strong></span>
<form method="post" action="/logout.php"><button type="submit">${t('signOut')}</button></form>`;
  const script = ctx.user === undefined ? '' : markup`<script src="/console.js" defer></script>\n`;
  return markup`<!doctype html>
<html lang="${ctx.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<title>${title} · ${t('appName')}</title>
<style>${new Html(STYLE)}</style>
${script}</head>
<body data-lang="${ctx.lang}">
<a class="skip" href="#main">${t('skip')}</a>
<header class="bar">
<a class="brand" href="/">${t('appName')}</a>
<div class="who">
<a href="${switchHref(ctx)}" hreflang="${other}" lang="${other}">${t('otherLanguage')}</a>${signedIn}
</div>
</header>
<p class="banner" id="agent-banner" role="status" data-offline="${t('offline')}"${ctx.offline ? '' : new Html(' hidden')}>${ctx.offline ? t('offline') : ''}</p>
<main id="main" tabindex="-1"${options.narrow === true ? new Html(' class="narrow"') : ''}>
${body}
</main>
</body>
</html>
`;
}

function statusBadge(t: Translate, status: Task['status'] | Run['status']): Html {
  return markup`<span class="badge s-${status}" data-status="${status}">${t(`status.${status}` as MessageKey)}</span>`;
}

function priorityLabel(t: Translate, priority: number): string {
  const word = ({ 2: 'low', 5: 'normal', 8: 'high', 10: 'urgent' } as Record<number, MessageKey>)[priority];
  return word === undefined ? String(priority) : `${priority} (${t(word)})`;
}

export function isActive(status: Task['status']): boolean {
  return status === 'pending' || status === 'running';
}

function cancelForm(t: Translate, task: Task): Html {
  return markup`<form method="post" action="/api/agent_proxy.php" class="cancel">
<input type="hidden" name="action" value="cancel_task">
<input type="hidden" name="task_id" value="${task.id}">
<button type="submit" class="danger" aria-label="${t('cancelTitle', { id: task.id })}">${t('cancel')}</button>
</form>`;
}

const SELECTED = new Html(' selected');
const AUTOFOCUS = new Html(' autofocus');

/** The sign-in form; `error` above it (announced). */
export function loginView(
  ctx: PageContext,
  options: { error?: string; username?: string; signedInAs?: string } = {},
): Html {
  const { t } = ctx;
  const described = options.error === undefined ? '' : new Html(' aria-describedby="login-error"');
  const again =
    options.signedInAs === undefined
      ? ''
      : markup`<p>${t('alreadySignedIn', { user: options.signedInAs })}</p>\n`;
  const error =
    options.error === undefined
      ? ''
      : markup`<p class="error" role="alert" id="login-error">${options.error}</p>\n`;
  return layout(
    ctx,
    t('signIn'),
    markup`<h1>${t('signInTitle')}</h1>
${again}${error}<form method="post" action="/login.php"${described}>
<label for="username">${t('username')}</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="64" value="${options.username ?? ''}"${options.username === undefined ? AUTOFOCUS : ''}>
<label for="password">${t('password')}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"${options.username === undefined ? '' : AUTOFOCUS}>
<button type="submit" class="primary">${t('signIn')}</button>
</form>`,
    { narrow: true },
  );
}

export interface ListView {
  readonly tasks: readonly Task[];
  readonly stats: TaskStats | undefined;
  /** The status group shown, or undefined for all. */
  readonly status: Task['status'] | undefined;
  readonly page: number;
  readonly hasNext: boolean;
  readonly online: boolean;
}

/** Tasks on one page of the list. */
export const PAGE_SIZE = 20;

function listHref(status: Task['status'] | undefined, page: number): string {
  const params = new URLSearchParams();
  if (status !== undefined) params.set('status', status);
  if (page > 1) params.set('page', String(page));
  const q = params.toString();
  return q === '' ? '/' : `/?${q}`;
}

export function consoleView(ctx: PageContext, view: ListView): Html {
  const { t, lang } = ctx;
  const count = (s: keyof TaskStats): string => (view.stats === undefined ? '' : ` (${view.stats[s]})`);
  const options = [
    markup`<option value="all"${view.status === undefined ? SELECTED : ''}>${t('all')}${count('total')}</option>`,
    ...TASK_STATUSES.map(
      (s) =>
        markup`<option value="${s}"${view.status === s ? SELECTED : ''}>${t(`status.${s}` as MessageKey)}${count(s)}: ${t(`group.${s}` as MessageKey)}</option>`,
    ),
  ];
  const rows = view.tasks.map(
    (task) => markup`<tr>
<td>${task.id}</td>
<td><a href="/task.php?id=${task.id}">${task.title}</a></td>
<td>${statusBadge(t, task.status)}</td>
<td>${priorityLabel(t, task.priority)}</td>
<td><time datetime="${task.created_at}">${formatTime(task.created_at, lang)}</time></td>
<td><time datetime="${task.updated_at}">${formatTime(task.updated_at, lang)}</time></td>
<td>${isActive(task.status) ? cancelForm(t, task) : ''}</td>
</tr>
`,
  );
  const table =
    view.tasks.length === 0
      ? markup`<p>${t('noTasks')}</p>`
      : markup`<table id="tasks">
<thead><tr><th scope="col">#</th><th scope="col">${t('title')}</th><th scope="col">${t('status')}</th><th scope="col">${t('priority')}</th><th scope="col">${t('created')}</th><th scope="col">${t('updated')}</th><th scope="col"><span class="sr">${t('cancel')}</span></th></tr></thead>
<tbody>
${rows}</tbody>
</table>`;
  const prev =
    view.page > 1
      ? markup`<a href="${listHref(view.status, view.page - 1)}" rel="prev">${t('previous')}</a>`
      : '';
  const next = view.hasNext
    ? markup`<a href="${listHref(view.status, view.page + 1)}" rel="next">${t('next')}</a>`
    : '';
  const pager =
    view.page > 1 || view.hasNext
      ? markup`<nav class="pager" aria-label="${t('page')}">${prev}<span>${t('page')} ${view.page}</span>${next}</nav>`
      : '';
  const priorities = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(
    (p) => markup`<option value="${p}"${p === 5 ? SELECTED : ''}>${priorityLabel(t, p)}</option>`,
  );
  return layout(
    ctx,
    t('tasks'),
    markup`<h1>${t('tasks')}</h1>
<div class="grid">
<section class="card" aria-labelledby="list-heading">
<h2 id="list-heading">${t('taskList')}</h2>
<form method="get" action="/" class="filters">
<div><label for="status-filter">${t('filter')}</label>
<select id="status-filter" name="status">${options}</select></div>
<button type="submit">${t('filterButton')}</button>
</form>
${table}
${pager}
</section>
<div>
<section class="card" aria-labelledby="new-heading">
<h2 id="new-heading">${t('newTask')}</h2>
<form method="post" action="/api/agent_proxy.php" id="create-form">
<input type="hidden" name="action" value="create_task">
<label for="title">${t('title')}</label>
<input id="title" name="title" type="text" required maxlength="200">
<label for="description">${t('description')}</label>
<p class="hint" id="description-hint">${t('descriptionHint')}</p>
<textarea id="description" name="description" maxlength="20000" aria-describedby="description-hint"></textarea>
<label for="priority">${t('priority')}</label>
<select id="priority" name="priority">${priorities}</select>
<button type="submit" class="primary">${t('create')}</button>
</form>
</section>
${chatSection(ctx, view.online)}
</div>
</div>`,
  );
}

function chatSection(ctx: PageContext, online: boolean, sessionId?: string): Html {
  const { t } = ctx;
  const form = online
    ? markup`<form method="post" action="/api/agent_proxy.php" id="chat-form" data-you="${t('you')}" data-agent="${t('agent')}">
<input type="hidden" name="action" value="chat">
<input type="hidden" name="session_id" value="${sessionId ?? ''}">
<label for="chat-message">${t('chatMessage')}</label>
<textarea id="chat-message" name="message" required maxlength="8000"></textarea>
<button type="submit" class="primary">${t('send')}</button>
</form>`
    : markup`<p class="muted">${t('chatOffline')}</p>`;
  return markup`<section class="card" aria-labelledby="chat-heading" id="chat">
<h2 id="chat-heading">${t('chat')}</h2>
<ol class="chatlog" id="chat-log" aria-live="polite"></ol>
<p class="error" role="alert" id="chat-error" hidden></p>
${form}
</section>`;
}

/** A chat answer for a browser without script: the exchange and the form to go on. */
export function chatView(
  ctx: PageContext,
  exchange: { message: string; response: string; sessionId: string },
): Html {
  const { t } = ctx;
  return layout(
    ctx,
    t('chat'),
    markup`<p><a href="/">${t('chatAgain')}</a></p>
<h1>${t('chat')}</h1>
<ol class="chatlog">
<li><strong>${t('you')}:</strong> ${exchange.message}</li>
<li class="agent"><strong>${t('agent')}:</strong> ${exchange.response}</li>
</ol>
${chatSection(ctx, true, exchange.sessionId)}`,
  );
}

export interface TaskView {
  readonly task: Task;
  readonly logs: readonly TaskLog[];
  readonly runs: readonly Run[];
  readonly notice?: string | undefined;
}

function logItem(t: Translate, lang: Lang, log: TaskLog): Html {
  return markup`<li data-id="${log.id}"><time datetime="${log.created_at}">${formatTime(log.created_at, lang)}</time><span class="l-${log.level}">${t(`level.${log.level}` as MessageKey)}</span><span class="text">${log.message}</span></li>
`;
}

function timeCell(iso: string | null, lang: Lang): Html | string {
  return iso === null ? '' : markup`<time datetime="${iso}">${formatTime(iso, lang)}</time>`;
}

export function taskView(ctx: PageContext, view: TaskView): Html {
  const { t, lang } = ctx;
  const { task } = view;
  // The store answers newest first; the page reads oldest first, so new lines go at the end.
  const logs = [...view.logs].sort((a, b) => a.id - b.id);
  const runs = view.runs.map(
    (run) => markup`<tr>
<td>${run.id}</td>
<td>${statusBadge(t, run.status)}</td>
<td>${run.steps}</td>
<td>${timeCell(run.started_at, lang)}</td>
<td>${timeCell(run.finished_at, lang)}</td>
<td><p class="text">${run.output ?? ''}</p></td>
<td><p class="text">${run.error ?? ''}</p></td>
</tr>
`,
  );
  const runsTable =
    runs.length === 0
      ? markup`<p>${t('noRuns')}</p>`
      : markup`<table>
<thead><tr><th scope="col">${t('run')}</th><th scope="col">${t('status')}</th><th scope="col">${t('steps')}</th><th scope="col">${t('started')}</th><th scope="col">${t('finished')}</th><th scope="col">${t('output')}</th><th scope="col">${t('error')}</th></tr></thead>
<tbody>
${runs}</tbody>
</table>`;
  const description =
    task.description === ''
      ? ''
      : markup`<dt>${t('description')}</dt><dd><p class="text">${task.description}</p></dd>\n`;
  const result =
    task.result === null
      ? markup`<span class="muted">${t('noResult')}</span>`
      : markup`<p class="text" id="result">${task.result}</p>`;
  const actions = isActive(task.status)
    ? markup`<div class="actions">${cancelForm(t, task)}<p><a href="/task.php?id=${task.id}">${t('refresh')}</a></p></div>`
    : '';
  const levels = JSON.stringify({ info: t('level.info'), warn: t('level.warn'), error: t('level.error') });
  return layout(
    ctx,
    `${t('task')} ${task.id}`,
    markup`<p><a href="/">${t('back')}</a></p>
<h1>${t('task')} ${task.id}: ${task.title}</h1>
${view.notice === undefined ? '' : markup`<p class="notice" role="status">${view.notice}</p>`}
<div id="task-live" data-task-id="${task.id}" data-status="${task.status}">
<section class="card" aria-label="${t('task')} ${task.id}" id="summary">
<dl class="facts">
<dt>${t('status')}</dt><dd>${statusBadge(t, task.status)}</dd>
<dt>${t('priority')}</dt><dd>${priorityLabel(t, task.priority)}</dd>
<dt>${t('attempts')}</dt><dd>${task.attempts}</dd>
<dt>${t('created')}</dt><dd>${timeCell(task.created_at, lang)}</dd>
<dt>${t('updated')}</dt><dd>${timeCell(task.updated_at, lang)}</dd>
${description}<dt>${t('result')}</dt><dd>${result}</dd>
</dl>
${actions}
</section>
<section class="card" aria-labelledby="runs-heading" id="runs">
<h2 id="runs-heading">${t('runs')}</h2>
${runsTable}
</section>
</div>
<section class="card" aria-labelledby="logs-heading">
<h2 id="logs-heading">${t('logs')}</h2>
<p class="muted" id="following" hidden>${t('following')}</p>
<p id="no-logs"${logs.length === 0 ? '' : new Html(' hidden')}>${t('noLogs')}</p>
<div role="log" aria-labelledby="logs-heading">
<ol class="logs" id="logs" data-levels="${levels}">
${logs.map((log) => logItem(t, lang, log))}</ol>
</div>
</section>`,
  );
}

/**
 * An action or page that failed, for a browser: the message and the way back (the task's page
 * when `taskId` is given, else the list).
 */
export function errorView(ctx: PageContext, status: number, message: string, taskId?: number): Html {
  const { t } = ctx;
  const title = status === 404 ? t('notFound') : t('errorTitle');
  return layout(
    ctx,
    title,
    markup`<h1>${title}</h1>
<p class="error" role="alert">${message}</p>
<p>${taskId === undefined ? markup`<a href="/">${t('back')}</a>` : markup`<a href="/task.php?id=${taskId}">${t('task')} ${taskId}</a>`}</p>`,
  );
}
