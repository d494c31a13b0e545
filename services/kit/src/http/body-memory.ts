import type { NextFunction, Request, Response } from 'express';
import { PayloadTooLargeError, ServiceUnavailableError } from '../errors.js';
import { requestContext } from './context.js';

/**
 * One process-wide budget for request bodies held in memory (`BODY_MEMORY_LIMIT`): bodies arriving,
 * read and waiting for a slot, and in work, until their response ends. The per-request limits
 * (`BODY_LIMIT`, a route's upload limit) bound one body; this bounds them all together.
 *
 * A body takes room as its bytes arrive, whether it declares its length or is chunked, and gives
 * it all back when its response ends in any way (answered, refused, timed out, the client gone). A
 * declared length reserves nothing: a client that declares a large body and sends it slowly holds
 * only what it has sent (and the body's pace, see body-idle.ts, cuts it off).
 *
 * One request may hold at most `share` bytes (`BODY_MEMORY_SHARE`, half the budget unless set), so
 * no single body takes the whole budget. Refusals:
 * - a declared length over the budget, or over the share: 413 before a byte is read, naming the
 *   setting (it could never fit);
 * - a declared length over the room free right now: 503 with `Retry-After`, before a byte is read
 *   (read and discarded by Node, as a 503 for readiness is);
 * - a body whose arriving bytes pass the share (chunked: 413) or the budget (503 with `Retry-After`)
 *   is answered at once and its connection closed, which stops the upload.
 *
 * Routes that stream their upload to disk (`bodyInMemory: false`) are not counted. The count is of
 * bytes on the wire; a parsed JSON body takes more than that in the heap.
 */
export class BodyMemory {
  private used = 0;
  private readonly refusalListeners: (() => void)[] = [];
  /** The most bytes one request may hold. */
  readonly share: number;

  constructor(
    readonly limit: number,
    share?: number,
  ) {
    if (!(Number.isSafeInteger(limit) && limit > 0))
      throw new RangeError('the body budget must be > 0 bytes');
    this.share = share ?? Math.max(1, Math.floor(limit / 2));
    if (!(Number.isSafeInteger(this.share) && this.share > 0 && this.share <= limit)) {
      throw new RangeError(
        `a request's share (${String(share)}) must be between 1 and the budget (${String(limit)})`,
      );
    }
  }

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

  /**
   * The route step before the body parsers: counts the body's bytes as they arrive, gives them back
   * when the response ends.
   */
  handler() {
    return (req: Request, res: Response, next: NextFunction): void => {
      const declared = declaredLength(req);
      if (declared === 0) {
        next();
        return;
      }
      if (declared !== undefined) {
        const refusal = this.refuseDeclared(declared);
        if (refusal !== undefined) {
          next(refusal);
          return;
        }
      }
      let held = 0;
      let done = false;
      const stop = (): void => {
        req.off('data', count);
      };
      res.once('close', () => {
        done = true;
        stop();
        this.give(held);
        held = 0;
      });
      // Once the response is written, what still arrives is read and discarded by Node, not held.
      const count = (chunk: Buffer): void => {
        if (done || res.writableEnded) {
          stop();
          return;
        }
        if (held + chunk.length > this.share) {
          stop();
          requestContext(req).abort(this.overShare(`${String(held + chunk.length)} bytes so far`));
          return;
        }
        if (!this.take(chunk.length)) {
          stop();
          requestContext(req).abort(this.refuse());
          return;
        }
        held += chunk.length;
      };
      // Counted from the moment the body parser starts reading ('resume' comes before the first
      // 'data'), so listening never starts the flow of a body no parser reads yet.
      req.once('resume', () => {
        if (!done && !res.writableEnded) req.on('data', count);
      });
      req.once('end', stop);
      next();
    };
  }

  /** Why a body that declares `declared` bytes is refused before it is read; undefined: read it. */
  private refuseDeclared(declared: number): Error | undefined {
    if (declared > this.limit) {
      return new PayloadTooLargeError(
        `The body (${String(declared)} bytes) is larger than this service's BODY_MEMORY_LIMIT ` +
          `(${String(this.limit)} bytes) for request bodies held at once; raise BODY_MEMORY_LIMIT to accept it`,
      );
    }
    if (declared > this.share) return this.overShare(`${String(declared)} bytes`);
    if (declared > this.limit - this.used) return this.refuse();
    return undefined;
  }

  private overShare(size: string): PayloadTooLargeError {
    return new PayloadTooLargeError(
      `The body (${size}) is larger than the ` +
        `BODY_MEMORY_SHARE (${String(this.share)} bytes) one request may hold in memory; send a smaller ` +
        'body, or raise BODY_MEMORY_SHARE to accept it',
    );
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
