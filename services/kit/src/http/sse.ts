import type { Request, Response } from 'express';
import { HttpError } from '../errors.js';
import { requestContext } from './context.js';
import { answersAbort } from './route.js';

/**
 * Server-sent events for a route handler: the headers proxies need to pass a stream through,
 * `data:` framing (multi-line safe), heartbeat comments so idle connections stay open, and the
 * terminal `data: [DONE]`. The request's signal ties it together: when the client goes away or the
 * deadline passes, `signal` aborts so the producer stops, and a deadline ends the stream with an
 * error event, as does a shutdown whose grace period ended.
 */
export interface SseStream {
  readonly signal: AbortSignal;
  /** True once the stream ended or the client left; further sends are dropped. */
  readonly closed: boolean;
  /** Sends one `data:` event (objects as JSON); resolves when the socket can take more. */
  send(data: unknown): Promise<void>;
  /** Sends a named event. */
  event(name: string, data: unknown): Promise<void>;
  /** Sends an error event shaped like the route's error bodies, then ends the stream. */
  fail(error: unknown, body?: unknown): void;
  /** Writes `data: [DONE]` and ends the stream. */
  done(): void;
}

export interface SseOptions {
  readonly heartbeatMs?: number;
  /** Extra response headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * End a failed stream with `data: [DONE]` too, after its error event (protocols, like the
   * agent's, whose every stream ends with [DONE]). Default false: the error event ends it.
   */
  readonly doneAfterError?: boolean;
}

export function openSse(req: Request, res: Response, options: SseOptions = {}): SseStream {
  const ctx = requestContext(req);
  res.status(200);
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache, no-transform');
  res.setHeader('connection', 'keep-alive');
  res.setHeader('x-accel-buffering', 'no');
  for (const [name, value] of Object.entries(options.headers ?? {})) res.setHeader(name, value);
  res.flushHeaders();
  req.socket.setNoDelay(true);

  let ended = false;
  const heartbeat = setInterval(() => {
    if (!ended) res.write(': keep-alive\n\n');
  }, options.heartbeatMs ?? 15_000);
  heartbeat.unref();
  const end = (): void => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    ctx.signal.removeEventListener('abort', onAbort);
    if (!res.writableEnded) res.end();
  };
  const write = async (frame: string): Promise<void> => {
    if (ended || res.writableEnded || res.destroyed) return;
    if (!res.write(frame)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  };
  const stream: SseStream = {
    signal: ctx.signal,
    get closed() {
      return ended || res.writableEnded || res.destroyed;
    },
    send: (data) => write(frame(undefined, data)),
    event: (name, data) => write(frame(name, data)),
    fail(error, body) {
      const message = error instanceof HttpError ? error.message : 'Internal server error';
      const payload = body ?? {
        error: { message, code: error instanceof HttpError ? error.code : 'internal_error' },
      };
      if (!ended && !res.destroyed) {
        res.write(frame('error', payload));
        if (options.doneAfterError === true) res.write('data: [DONE]\n\n');
      }
      end();
    },
    done() {
      if (!ended && !res.destroyed) res.write('data: [DONE]\n\n');
      end();
    },
  };
  const onAbort = (): void => {
    if (answersAbort(ctx.signal.reason)) stream.fail(ctx.signal.reason);
    else end();
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  res.once('close', end);
  return stream;
}

function frame(name: string | undefined, data: unknown): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  const lines = text.split(/\r\n|\r|\n/).map((line) => `data: ${line}`);
  return `${name === undefined ? '' : `event: ${name}\n`}${lines.join('\n')}\n\n`;
}
