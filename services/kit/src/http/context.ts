import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { NextFunction, Request, Response } from 'express';
import { ClientClosedRequestError, GatewayTimeoutError } from '../errors.js';
import type { Logger } from '../logger.js';

/**
 * Per-request context: the request id, a logger bound to it, and one AbortSignal that fires when
 * the request's deadline passes (reason: GatewayTimeoutError) or the client goes away (reason:
 * ClientClosedRequestError). Work that honours the signal stops instead of running on for nobody.
 */
export interface RequestContext {
  readonly requestId: string;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Route template (`/sessions/:id`) once a route matched, for metrics and logs. */
  route: string | undefined;
  /** When the request arrived (`performance.now()` ms). */
  readonly receivedAt: number;
  abort(reason: Error): void;
}

const contexts = new WeakMap<Request, RequestContext>();

export function requestContext(req: Request): RequestContext {
  const ctx = contexts.get(req);
  if (ctx === undefined) throw new Error('requestContext() called outside a kit app');
  return ctx;
}

const REQUEST_ID = /^[\w.:@-]{1,128}$/;

export interface ContextOptions {
  readonly logger: Logger;
  readonly timeoutMs: number;
  /** Every live request's context, so shutdown can abort what outlives the grace period. */
  readonly live: Set<RequestContext>;
}

export function contextMiddleware(options: ContextOptions) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('x-request-id', requestId);
    const controller = new AbortController();
    let log: Logger | undefined;
    const ctx: RequestContext = {
      requestId,
      signal: controller.signal,
      // A child logger costs a serialization of its bindings: made only when a handler logs.
      get log() {
        log ??= options.logger.child({ reqId: requestId });
        return log;
      },
      route: undefined,
      receivedAt: performance.now(),
      abort: (reason) => {
        if (!controller.signal.aborted) controller.abort(reason);
      },
    };
    contexts.set(req, ctx);
    options.live.add(ctx);
    const timer = setTimeout(() => {
      ctx.abort(new GatewayTimeoutError(`The request exceeded the ${formatMs(options.timeoutMs)} deadline`));
    }, options.timeoutMs);
    timer.unref();
    res.once('close', () => {
      clearTimeout(timer);
      options.live.delete(ctx);
      if (!res.writableFinished) ctx.abort(new ClientClosedRequestError());
    });
    next();
  };
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
