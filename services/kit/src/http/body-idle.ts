import type { NextFunction, Request, Response } from 'express';
import { RequestTimeoutError } from '../errors.js';
import { declaredLength } from './body-memory.js';
import { requestContext } from './context.js';

/**
 * The route step before the body parsers that answers 408 when a body stops arriving: no byte for
 * `idleMs` (BODY_IDLE_TIMEOUT_MS) once the parser began reading. A body shorter than its
 * Content-Length never ends; without this it held its connection (and its share of the body
 * budget) until the request's deadline, ten minutes on the LLMs. The 408 closes the connection,
 * which also ends the upload. The deadline still bounds a slow upload that keeps trickling.
 */
export function bodyIdleHandler(idleMs: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (declaredLength(req) === 0 || req.complete) {
      next();
      return;
    }
    const onIdle = (): void => {
      stop();
      requestContext(req).abort(
        new RequestTimeoutError(
          `No part of the request body arrived for ${String(idleMs)} ms: it is shorter than its ` +
            'Content-Length, or the upload stalled',
        ),
      );
    };
    let timer: NodeJS.Timeout | undefined;
    /** Each chunk restarts the wait. */
    const arm = (): void => {
      if (timer === undefined) timer = setTimeout(onIdle, idleMs);
      else timer.refresh();
    };
    const stop = (): void => {
      clearTimeout(timer);
      req.off('data', arm);
    };
    // From the moment the parser starts reading ('resume' comes before the first 'data'), so
    // listening never starts the flow of a body no parser reads yet.
    req.once('resume', () => {
      if (req.complete || res.writableEnded) return;
      req.on('data', arm);
      arm();
    });
    req.once('end', stop);
    res.once('close', stop);
    next();
  };
}
