import { createHash } from 'node:crypto';
import type { Response } from 'express';

/**
 * The two small HTML pages a browser sees: the sign-in form (`GET /login.php`) and, once signed in,
 * `/`. No script, no external asset: one inline style allowed by its hash in the CSP, the form
 * posts to this origin only, the page may not be framed.
 */

const STYLE = [
  'body{font-family:system-ui,sans-serif;margin:0;background:#f4f6f8;color:#1b1f24}',
  'main{max-width:22rem;margin:12vh auto;padding:2rem;background:#fff;border-radius:.5rem;box-shadow:0 1px 4px #0003}',
  'h1{font-size:1.4rem;margin:0 0 1rem}',
  'label{display:block;margin:.8rem 0 .3rem;font-weight:600}',
  'input{box-sizing:border-box;width:100%;padding:.55rem;font-size:1rem;border:1px solid #7a8591;border-radius:.3rem}',
  'input:focus,button:focus{outline:3px solid #1d63c5;outline-offset:1px}',
  'button{margin-top:1.2rem;width:100%;padding:.6rem;font-size:1rem;border:0;border-radius:.3rem;background:#1d63c5;color:#fff;cursor:pointer}',
  '.error{color:#a4161a;background:#fdecec;padding:.6rem;border-radius:.3rem}',
].join('');

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${STYLE_HASH}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

export function sendHtml(res: Response, status: number, html: string): void {
  res.status(status);
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'same-origin');
  res.setHeader('cache-control', 'no-store');
  res.send(html);
}

/** The sign-in form; `error` is shown above it (announced to screen readers). */
export function loginPage(options: { error?: string; username?: string; signedInAs?: string } = {}): string {
  const error =
    options.error === undefined
      ? ''
      : `<p class="error" role="alert" id="login-error">${escapeHtml(options.error)}</p>\n`;
  const already =
    options.signedInAs === undefined
      ? ''
      : `<p>You are signed in as <strong>${escapeHtml(options.signedInAs)}</strong>. Signing in again starts a new session.</p>\n`;
  const described = options.error === undefined ? '' : ' aria-describedby="login-error"';
  return page(
    'Sign in · Task agent',
    `<h1>Sign in to the task agent</h1>
${already}${error}<form method="post" action="/login.php"${described}>
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="64" value="${escapeHtml(options.username ?? '')}"${options.username === undefined ? ' autofocus' : ''}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"${options.username === undefined ? '' : ' autofocus'}>
<button type="submit">Sign in</button>
</form>`,
  );
}

/** `/` for a signed-in browser: who, where the API is, and a sign-out button. */
export function homePage(user: string): string {
  return page(
    'Task agent proxy',
    `<h1>Task agent proxy</h1>
<p>Signed in as <strong>${escapeHtml(user)}</strong>.</p>
<p>The API is <code>POST /api/agent_proxy.php</code> with an <code>action</code> field; <a href="/docs">its documentation</a>.</p>
<form method="post" action="/logout.php">
<button type="submit">Sign out</button>
</form>`,
  );
}
