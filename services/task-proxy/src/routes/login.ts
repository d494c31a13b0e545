import {
  BadRequestError,
  ConcurrencyGate,
  defineRoute,
  TooManyRequestsError,
  UnauthorizedError,
  type AnyRoute,
  type HttpError,
  type Logger,
} from '@clinicalsuite/kit';
import type { Request, Response } from 'express';
import { LoginResponseSchema, LogoutResponseSchema } from '../schemas/api.js';
import { USERNAME } from '../adapters/users.js';
import type { TaskProxyConfig } from '../config.js';
import { clientAddress } from '../domain/client-address.js';
import { FailureWindow } from '../domain/rate-limit.js';
import type { SignInOutcome } from '../metrics.js';
import {
  bodyText,
  clearSessionCookie,
  cookieValues,
  formBody,
  originGuard,
  prefersHtml,
  setSessionCookie,
} from './http.js';
import { loginView } from '../console/views.js';
import { pageContext, sendConsole } from './console.js';
import { sendHtml } from './pages.js';
import { sessionOf, type ProxyRuntime } from './runtime.js';

/**
 * `/login.php` (GET: the sign-in page; POST: check the user, start a session) and `/logout.php`.
 * A browser's form (Accept prefers text/html) gets pages and 303 redirects; an API client gets
 * JSON. Bad credentials answer the same for an unknown user and a wrong password, after the same
 * work (a decoy hash for unknown users).
 */

export const BAD_CREDENTIALS = 'Invalid username or password';
const MAX_PASSWORD_CHARS = 1024;

/** What limits sign-ins: failures per user and per address, and password checks at once. */
export function signInLimits(
  config: TaskProxyConfig,
): Pick<ProxyRuntime, 'failuresPerUser' | 'failuresPerAddress' | 'warned' | 'loginGate'> {
  const windowMs = config.TASK_PROXY_LOGIN_WINDOW_S * 1000;
  return {
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
  };
}

export function loginRoutes(rt: ProxyRuntime): AnyRoute[] {
  const body = formBody({
    allowedOrigins: rt.config.TASK_PROXY_ALLOWED_ORIGINS,
    bodyLimit: rt.config.BODY_LIMIT,
  });
  return [
    defineRoute({
      method: 'get',
      path: '/login.php',
      summary: 'The sign-in page (HTML form posting username and password to itself)',
      tags: ['session'],
      responses: { 200: { description: 'HTML sign-in form', contentType: 'text/html' } },
      handler: ({ req, res, log }) => {
        noteClientAddress(rt, req, log);
        const session = sessionOf(rt, req);
        sendHtml(
          res,
          200,
          loginView(pageContext(req, res, false), session === undefined ? {} : { signedInAs: session.user }),
        );
        return undefined;
      },
    }),
    defineRoute({
      method: 'post',
      path: '/login.php',
      summary: 'Sign in: on success a new session (cookie PHPSESSID; any old session of the request ends)',
      description:
        'Fields `username` and `password` as multipart/form-data, application/x-www-form-urlencoded or JSON. ' +
        'API clients get `{authenticated: true, user}`; a browser form (Accept prefers text/html) is ' +
        'redirected (303) to `/`. Wrong credentials: 401 (the same for an unknown user). Past ' +
        '`TASK_PROXY_LOGIN_MAX_FAILURES` failures per username and address in the window: 429 with Retry-After. ' +
        'A request from a page of another origin: 403.',
      tags: ['session'],
      bodyContentType: 'application/x-www-form-urlencoded',
      bodyParser: body,
      response: LoginResponseSchema,
      responses: {
        303: { description: 'Signed in from a browser form: redirected to /' },
        400: { description: 'username or password missing' },
        401: { description: 'Invalid username or password' },
        403: { description: 'Cross-origin request refused' },
        429: { description: 'Too many failed sign-ins: wait Retry-After seconds' },
      },
      // The fields are checked before readiness: a malformed sign-in is a 400 while not ready too.
      requiresReady: 'in-handler',
      handler: async ({ req, res, signal, log, requireReady }) => {
        const html = prefersHtml(req);
        const username = bodyText(req, 'username')?.trim() ?? '';
        const password = bodyText(req, 'password') ?? '';
        // JSON clients get the error; a browser gets the form again with the message.
        const refuse = (outcome: SignInOutcome, error: HttpError): void => {
          rt.metrics.signIns.inc({ outcome });
          if (!html) throw error;
          for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
          sendHtml(
            res,
            error.status,
            loginView(pageContext(req, res, false), { error: error.message, username }),
          );
        };
        if (username === '' || password === '') {
          refuse(
            'bad_request',
            new BadRequestError('Enter both username and password', { code: 'missing_credentials' }),
          );
          return undefined;
        }
        if (password.length > MAX_PASSWORD_CHARS) {
          refuse(
            'bad_request',
            new BadRequestError(`The password must be at most ${MAX_PASSWORD_CHARS} characters`),
          );
          return undefined;
        }
        requireReady();
        // Per username + req.ip, which no header changes; per address, as clientAddress() says.
        const userKey = `${username.toLowerCase()}\u0000${req.ip ?? 'unknown'}`;
        const address = noteClientAddress(rt, req, log);
        // Both windows start a try (a try in progress counts as a failure), or neither does.
        const now = rt.now();
        const userWait = rt.failuresPerUser.begin(userKey, now);
        const addressWait = rt.failuresPerAddress.begin(address, now);
        if (userWait === 0 && addressWait > 0) rt.failuresPerUser.end(userKey, now, false);
        if (addressWait === 0 && userWait > 0) rt.failuresPerAddress.end(address, now, false);
        const waitMs = Math.max(userWait, addressWait);
        if (waitMs > 0) {
          log.warn({ ip: address }, 'sign-in refused: too many failures');
          const seconds = Math.ceil(waitMs / 1000);
          refuse(
            'rate_limited',
            new TooManyRequestsError(`Too many failed sign-ins: try again in ${seconds} seconds`, seconds),
          );
          return undefined;
        }
        let result: Awaited<ReturnType<typeof rt.users.check>> | undefined;
        try {
          await rt.users.refresh().catch((error: unknown) => {
            // A broken users file after a good one: the users read before stay.
            log.error({ err: error }, 'users file not re-read; the users read before stay');
          });
          let release: () => void;
          try {
            release = await rt.loginGate.acquire(signal);
          } catch (error) {
            // The queue of password checks is full, or no check slot came free in time: a 429
            // like the rate limit's, shown to a browser on the sign-in page and counted alike.
            if (!(error instanceof TooManyRequestsError) || signal.aborted) throw error;
            log.warn({ ip: address }, 'sign-in refused: too many sign-ins being checked');
            refuse('rate_limited', error);
            return undefined;
          }
          try {
            result = USERNAME.test(username)
              ? await rt.users.check(username, password)
              : await rt.users.check('', password);
          } finally {
            release();
          }
        } finally {
          // A try that ended without an answer (the client left, the queue was full) is no failure.
          const failed = result !== undefined && result !== 'ok';
          rt.failuresPerUser.end(userKey, rt.now(), failed);
          rt.failuresPerAddress.end(address, rt.now(), failed);
        }
        if (result !== 'ok') {
          log.warn({ ip: address }, 'sign-in failed');
          refuse('bad_credentials', new UnauthorizedError(BAD_CREDENTIALS));
          return undefined;
        }
        rt.failuresPerUser.succeed(userKey);
        const { id } = startSession(rt, req, username);
        setSessionCookie(req, res, id);
        rt.metrics.signIns.inc({ outcome: 'success' });
        log.info({ user: username }, 'signed in');
        res.setHeader('cache-control', 'no-store');
        if (html) {
          res.redirect(303, '/');
          return undefined;
        }
        return { authenticated: true as const, user: username };
      },
    }),
    logoutRoute(
      rt,
      'post',
      formBody({ allowedOrigins: rt.config.TASK_PROXY_ALLOWED_ORIGINS, bodyLimit: rt.config.BODY_LIMIT }),
    ),
    logoutRoute(rt, 'get', [originGuard(rt.config.TASK_PROXY_ALLOWED_ORIGINS)]),
  ];
}

/**
 * The sign-in's client address (domain/client-address.ts); the first request that carries
 * X-Forwarded-For the service does not trust is logged, once.
 */
function noteClientAddress(rt: ProxyRuntime, req: Request, log: Logger): string {
  const address = clientAddress({
    ip: req.ip,
    peer: req.socket.remoteAddress,
    forwardedFor: req.headers['x-forwarded-for'],
  });
  if (address.untrustedForward && !rt.warned.untrustedProxy) {
    rt.warned.untrustedProxy = true;
    log.warn(
      { peer: req.socket.remoteAddress },
      'requests arrive through a proxy (X-Forwarded-For) that TRUST_PROXY does not name: every client ' +
        'appears with the proxy address, cookies are not marked Secure behind TLS, and sign-ins are ' +
        'counted by the forwarded address it claims; set TRUST_PROXY to that proxy (its address or ' +
        'subnet, or hops=1), see the task proxy README',
    );
  }
  return address.key;
}

/** A new session for `user`; every session the request's cookies named ends (rotation). */
function startSession(rt: ProxyRuntime, req: Request, user: string): { id: string } {
  const previous = cookieValues(req);
  const now = rt.now();
  for (const old of previous.slice(1)) rt.sessions.destroy(old);
  return rt.sessions.create(user, now, previous[0]);
}

function logoutRoute(rt: ProxyRuntime, method: 'get' | 'post', parser: AnyRoute['bodyParser']): AnyRoute {
  return defineRoute({
    method,
    path: '/logout.php',
    summary:
      method === 'post'
        ? 'Sign out: the session ends and the cookie is cleared'
        : 'Sign out from a link (same as POST; refused from another site)',
    tags: ['session'],
    ...(parser === undefined ? {} : { bodyParser: parser }),
    response: LogoutResponseSchema,
    responses: {
      303: { description: 'From a browser: redirected to /login.php' },
      403: { description: 'Cross-origin request refused' },
    },
    // Signing out works even while the users are being read.
    requiresReady: false,
    handler: ({ req, res, log }) => {
      let ended = false;
      for (const id of cookieValues(req)) ended = rt.sessions.destroy(id) || ended;
      clearSessionCookie(req, res);
      res.setHeader('cache-control', 'no-store');
      if (ended) log.info('signed out');
      if (prefersHtml(req)) {
        res.redirect(303, '/login.php');
        return undefined;
      }
      return { authenticated: false as const, signed_out: ended };
    },
  });
}

/** `/` for a browser: the console, or the way to the sign-in page. False for an API client. */
export async function sendHome(
  rt: ProxyRuntime,
  req: Request,
  res: Response,
  signal: AbortSignal,
): Promise<boolean> {
  if (!prefersHtml(req)) return false;
  await sendConsole(rt, req, res, signal);
  return true;
}
