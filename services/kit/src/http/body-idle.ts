import { performance } from 'node:perf_hooks';
import type { NextFunction, Request, Response } from 'express';
import { RequestTimeoutError } from '../errors.js';
import { declaredLength } from './body-memory.js';
import { requestContext } from './context.js';

/**
 * The route step before the body parsers that answers 408 when a body arrives too slowly, from the
 * moment the parser began reading it:
 * - idle: no byte for `idleMs` (BODY_IDLE_TIMEOUT_MS), e.g. a body shorter than its Content-Length;
 * - slow: fewer than `minRate` bytes per second (BODY_MIN_RATE) on average, with `idleMs` of slack:
 *   `t` ms into the body, at least `(t - idleMs) * minRate / 1000` bytes must have arrived. A client
 *   that sends a byte every few seconds keeps clear of the idle rule but not of this one.
 * Without them a slow body held its connection, and the body memory it had taken, until the
 * request's deadline (ten minutes on the LLMs). The 408 closes the connection, which ends the
 * upload and gives back its memory (see body-memory.ts). Time while the server itself pauses the
 * body (back-pressure from where it is written) does not count against the client. `minRate` 0
 * turns the slow rule off; the deadline still bounds an upload that keeps to the rate.
 */
export function bodyIdleHandler(idleMs: number, minRate = 0) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (declaredLength(req) === 0 || req.complete) {
      next();
      return;
    }
    let start = 0;
    let last = 0;
    let received = 0;
    let pausedAt: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;

    /** When the body falls behind: no byte for idleMs, or behind the minimum rate. */
    const idleAt = (): number => last + idleMs;
    const slowAt = (): number => (minRate > 0 ? start + idleMs + (received * 1000) / minRate : Infinity);

    const check = (): void => {
      const now = performance.now();
      if (pausedAt !== undefined) {
        // The server is not reading: the client cannot send. Judged again once it reads.
        timer = setTimeout(check, idleMs);
        return;
      }
      if (now >= idleAt()) {
        fail(
          `No part of the request body arrived for ${String(idleMs)} ms: it is shorter than its ` +
            'Content-Length, or the upload stalled',
        );
        return;
      }
      if (now >= slowAt()) {
        const seconds = ((now - start) / 1000).toFixed(1);
        fail(
          `The request body arrived too slowly: ${String(received)} bytes in ${seconds} s, under ` +
            `the minimum of ${String(minRate)} bytes per second (BODY_MIN_RATE)`,
        );
        return;
      }
      timer = setTimeout(check, Math.max(1, Math.ceil(Math.min(idleAt(), slowAt()) - now)));
    };
    const fail = (message: string): void => {
      stop();
      requestContext(req).abort(new RequestTimeoutError(message));
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      last = performance.now();
    };
    const onPause = (): void => {
      pausedAt ??= performance.now();
    };
    const onResume = (): void => {
      if (pausedAt === undefined) return;
      const paused = performance.now() - pausedAt;
      pausedAt = undefined;
      start += paused;
      last += paused;
    };
    const stop = (): void => {
      stopped = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('pause', onPause);
      req.off('resume', onResume);
    };
    // From the moment the parser starts reading ('resume' comes before the first 'data'), so
    // listening never starts the flow of a body no parser reads yet.
    req.once('resume', () => {
      if (stopped || req.complete || res.writableEnded) return;
      start = last = performance.now();
      req.on('data', onData);
      req.on('pause', onPause);
      req.on('resume', onResume);
      timer = setTimeout(check, idleMs);
    });
    req.once('end', stop);
    res.once('close', stop);
    next();
  };
}
