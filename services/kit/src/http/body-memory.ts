import type { NextFunction, Request, Response } from 'express';
import { PayloadTooLargeError, ServiceUnavailableError } from '../errors.js';
import { requestContext } from './context.js';

/**
 * One process-wide budget for request bodies held in memory (`BODY_MEMORY_LIMIT`): bodies arriving,
 * read and waiting for a slot, and in work, until their response ends. The per-request limits
 * (`BODY_LIMIT`, a route's upload limit) bound one body; without this, the bodies of many
 * concurrent uploads were bounded only by the connections the server takes.
 *
 * A body that declares its length takes all of it on arrival, before a byte is read; past the
 * budget it is refused with 503 and `Retry-After` (read and discarded by Node, as a 503 for
 * readiness is). A chunked body takes its bytes as they arrive; past the budget the request is
 * answered 503 at once and its connection closed, which stops the upload. A declared length over
 * the whole budget can never fit: 413, naming the setting. Routes that stream their upload to
 * disk (`bodyInMemory: false`) are not counted. The count is of bytes on the wire; a parsed JSON
 * body takes more than that in the heap.
 */
export class BodyMemory {
  private used = 0;
  private readonly refusalListeners: (() => void)[] = [];

  constructor(readonly limit: number) {}

  /** Bytes of request bodies held now. */
  get inUse(): number {
    return this.used;
  }

  /** Takes `bytes` if they fit in the budget. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  /** Called on each request refused for want of room (for the refusal counter). */
  onRefusal(listener: () => void): void {
    this.refusalListeners.push(listener);
  }

  /** The route step before the body parsers: takes the body's bytes, gives them back when the response ends. */
  handler() {
    return (req: Request, res: Response, next: NextFunction): void => {
      const declared = declaredLength(req);
      if (declared === 0) {
        next();
        return;
      }
      let held = 0;
      let done = false;
      res.once('close', () => {
        done = true;
        this.give(held);
        held = 0;
      });
      if (declared !== undefined) {
        if (declared > this.limit) {
          next(
            new PayloadTooLargeError(
              `The body (${String(declared)} bytes) is larger than this service's BODY_MEMORY_LIMIT ` +
                `(${String(this.limit)} bytes) for request bodies held at once; raise BODY_MEMORY_LIMIT to accept it`,
            ),
          );
          return;
        }
        if (!this.take(declared)) {
          next(this.refuse());
          return;
        }
        held = declared;
        next();
        return;
      }
      // Chunked: counted from the moment the body parser starts reading ('resume' comes before the
      // first 'data'), so listening never starts the flow of a body no parser reads yet.
      const count = (chunk: Buffer): void => {
        if (done) return;
        if (this.take(chunk.length)) {
          held += chunk.length;
          return;
        }
        req.off('data', count);
        requestContext(req).abort(this.refuse());
      };
      req.once('resume', () => {
        if (!done) req.on('data', count);
      });
      req.once('end', () => req.off('data', count));
      next();
    };
  }

  private refuse(): ServiceUnavailableError {
    for (const listener of this.refusalListeners) listener();
    return new ServiceUnavailableError(
      'The service is holding as many request bodies as its BODY_MEMORY_LIMIT allows; retry shortly',
      2,
    );
  }
}

/** The declared Content-Length; 0 when there is no body; undefined for a chunked body. */
export function declaredLength(req: Request): number | undefined {
  const header = req.headers['content-length'];
  if (header !== undefined) {
    const length = Number(header);
    // Node refuses a malformed Content-Length itself (400) before the request reaches here.
    return Number.isSafeInteger(length) && length >= 0 ? length : 0;
  }
  return req.headers['transfer-encoding'] === undefined ? 0 : undefined;
}
