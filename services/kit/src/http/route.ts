import { performance } from 'node:perf_hooks';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import {
  GatewayTimeoutError,
  PayloadTooLargeError,
  RequestTimeoutError,
  ServiceUnavailableError,
  ValidationError,
  type FieldIssue,
} from '../errors.js';
import type { ConcurrencyGate } from '../gate.js';
import type { Logger } from '../logger.js';
import type { Readiness } from '../readiness.js';
import { requestContext } from './context.js';

/**
 * A route is declared once, with zod schemas for what it takes and returns; the same declaration
 * validates requests (422 listing the failing fields), documents the route in OpenAPI, decides
 * whether it passes the concurrency gate and whether it needs a token.
 */

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseDoc {
  readonly description: string;
  readonly schema?: z.ZodType;
  /** Defaults to application/json. */
  readonly contentType?: string;
}

export interface HandlerContext<B, Q, P> {
  readonly body: B;
  readonly query: Q;
  readonly params: P;
  readonly req: Request;
  readonly res: Response;
  /** Aborted on the deadline (504) or when the client goes away: stop the work. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly requestId: string;
  /** When the request arrived (`performance.now()` ms): queue time is `admittedAt - receivedAt`. */
  readonly receivedAt: number;
  /**
   * When it was admitted (`performance.now()` ms): got its slot, or had its body read on ungated
   * routes. The upload comes before this, so it counts neither as the service's work nor as its slot.
   */
  readonly admittedAt: number;
  /**
   * Throws the 503 of a service that is not ready (with its reason). Routes declared with
   * `requiresReady: 'in-handler'` call it once they have checked what the schemas cannot (an
   * uploaded file, an image's bytes), so a malformed request gets its 4xx whether or not the
   * service is ready.
   */
  readonly requireReady: () => void;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteDefinition<
  B extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  P extends z.ZodType | undefined = undefined,
> {
  readonly method: HttpMethod;
  /** Express syntax: `/sessions/:session_id`. */
  readonly path: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly body?: B;
  readonly query?: Q;
  readonly params?: P;
  /** The success response's JSON schema (status `status`, 200 by default). */
  readonly response?: z.ZodType;
  readonly status?: number;
  /** Other documented responses, by status code. */
  readonly responses?: Readonly<Record<number, ResponseDoc>>;
  /** Passes the concurrency gate (and counts as work). Default: every method but GET. */
  readonly gated?: boolean;
  /**
   * Answers 503 while the service is not ready, after the request is validated (body, query and
   * path against their schemas: a malformed request gets its 400/422 whether or not the service is
   * ready) and before the concurrency slot. `'in-handler'`: the handler validates the rest of its
   * input first and then calls `requireReady()` itself. Default: same as `gated`.
   */
  readonly requiresReady?: boolean | 'in-handler';
  /** `false` serves the route without a token. Default: the app's auth policy applies. */
  readonly auth?: boolean;
  /** Replaces the JSON/urlencoded body parsers, e.g. multer for multipart routes. */
  readonly bodyParser?: readonly RequestHandler[];
  /**
   * Whether the body is held in memory and counts against BODY_MEMORY_LIMIT (default true); false
   * for uploads streamed to disk.
   */
  readonly bodyInMemory?: boolean;
  /** The media type `body` documents in OpenAPI (`multipart/form-data` for uploads). Default JSON. */
  readonly bodyContentType?: 'application/json' | 'multipart/form-data' | 'application/x-www-form-urlencoded';
  /** A deadline shorter or longer than the app's, in ms. */
  readonly timeoutMs?: number;
  /**
   * The status of a request that breaks `body`, `query` or `params` (the same field list either way):
   * 422 by default, 400 where the API's spec says so. OpenAPI documents the one in use.
   */
  readonly validationStatus?: 400 | 422;
  /**
   * Returns the JSON body to send, or sends the response itself (streams, files) and returns
   * nothing.
   */
  readonly handler: (ctx: HandlerContext<Out<B>, Out<Q>, Out<P>>) => unknown;
}

/** Identity function that infers the handler's types from the schemas. */
export function defineRoute<
  B extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  P extends z.ZodType | undefined = undefined,
>(definition: RouteDefinition<B, Q, P>): RouteDefinition<B, Q, P> {
  return definition;
}

// The registry stores routes of any schema types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDefinition<any, any, any>;

export interface RouteRuntime {
  readonly gate: ConcurrencyGate;
  readonly readiness: Readiness;
  readonly sendError: (req: Request, res: Response, error: unknown) => void;
}

export function isGated(route: AnyRoute): boolean {
  return route.gated ?? route.method !== 'get';
}

/**
 * Whether the route reads a request body: its own `bodyParser`, else the app's JSON and form
 * parsers on every method but GET (so a DELETE with a broken JSON body is a 400 too).
 */
export function parsesBody(route: AnyRoute): boolean {
  return route.bodyParser === undefined ? route.method !== 'get' : route.bodyParser.length > 0;
}

/**
 * Before the body is read: the route's deadline. The deadline runs from arrival and covers the
 * upload, the wait and the work: when it passes before the body has all arrived, the 504 closes the
 * connection, which stops the upload. Readiness and the concurrency slot come later
 * (`routeHandler`), once the body is in and valid: a malformed request gets its 400/422 whether or
 * not the service is ready, and a slow or stalled upload holds none of the few slots that guard a
 * model.
 */
export function admissionHandler(route: AnyRoute, runtime: RouteRuntime) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const ctx = requestContext(req);
    if (route.timeoutMs !== undefined) {
      const timer = setTimeout(() => {
        ctx.abort(new GatewayTimeoutError(`The request exceeded the ${route.timeoutMs} ms deadline`));
      }, route.timeoutMs);
      res.once('close', () => clearTimeout(timer));
    }
    // The deadline (504), and a shutdown whose grace period ended (503 with Retry-After), answer at
    // once, whether the request is waiting for a slot, uploading or running.
    const onAbort = (): void => {
      if (!answersAbort(ctx.signal.reason) || res.headersSent) return;
      if (!req.complete) res.setHeader('connection', 'close');
      runtime.sendError(req, res, ctx.signal.reason);
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    res.once('close', () => ctx.signal.removeEventListener('abort', onAbort));
    next();
  };
}

/**
 * Whether an abort with this reason is answered to the client (the deadline's 504, the shutdown's
 * 503; while the body arrives, body-idle.ts's 408 and body-memory.ts's 503 and 413), rather than
 * being a client that left.
 */
export function answersAbort(
  reason: unknown,
): reason is GatewayTimeoutError | ServiceUnavailableError | RequestTimeoutError | PayloadTooLargeError {
  return (
    reason instanceof GatewayTimeoutError ||
    reason instanceof ServiceUnavailableError ||
    reason instanceof RequestTimeoutError ||
    reason instanceof PayloadTooLargeError
  );
}

/**
 * The final handler of a route, once its body is read: validate (400/422), check readiness (503),
 * wait for a slot (gated routes), run, serialize. Queue time runs from arrival to the slot; the work
 * from the slot on.
 */
export function routeHandler(route: AnyRoute, runtime: RouteRuntime) {
  const gated = isGated(route);
  const requiresReady = route.requiresReady ?? gated;
  const requireReady = (): void => {
    if (!runtime.readiness.ready) {
      throw new ServiceUnavailableError(`Service not ready: ${runtime.readiness.reason ?? 'starting'}`);
    }
  };
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const ctx = requestContext(req);
    try {
      ctx.signal.throwIfAborted(); // the deadline answered, or the client left, during the upload
      const input = parseInput(route, req);
      if (requiresReady === true) requireReady();
      if (gated) {
        const release = await runtime.gate.acquire(ctx.signal);
        res.once('close', release);
        if (res.closed) release();
      }
      const admittedAt = performance.now();
      const result: unknown = await route.handler({
        ...input,
        req,
        res,
        signal: ctx.signal,
        log: ctx.log,
        requestId: ctx.requestId,
        receivedAt: ctx.receivedAt,
        admittedAt,
        requireReady,
      });
      if (result !== undefined && !res.headersSent && !ctx.signal.aborted) {
        // A handler may set another status (e.g. 503 on /health) before returning its body.
        if (res.statusCode === 200 && route.status !== undefined) res.status(route.status);
        res.json(result);
      }
    } catch (error) {
      if (res.headersSent) {
        if (!res.writableEnded) res.end();
        if (!ctx.signal.aborted) ctx.log.error({ err: error }, 'error after the response started');
        return;
      }
      if (ctx.signal.aborted) {
        // Answered by the abort (the deadline, a shutdown) as it came, or the client is gone.
        if (answersAbort(ctx.signal.reason)) next(ctx.signal.reason);
        return;
      }
      next(error);
    }
  };
}

function parseInput(route: AnyRoute, req: Request): { body: unknown; query: unknown; params: unknown } {
  const issues: FieldIssue[] = [];
  const parse = (schema: z.ZodType | undefined, value: unknown, loc: string): unknown => {
    if (schema === undefined) return undefined;
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    for (const issue of result.error.issues) {
      issues.push({
        loc: [loc, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))],
        msg: issue.message,
        type: issue.code,
      });
    }
    return undefined;
  };
  const body = parse(route.body as z.ZodType | undefined, req.body ?? {}, 'body');
  const query = parse(route.query as z.ZodType | undefined, req.query, 'query');
  const params = parse(route.params as z.ZodType | undefined, req.params, 'path');
  if (issues.length > 0) throw new ValidationError(issues, { status: route.validationStatus ?? 422 });
  return { body, query, params };
}
