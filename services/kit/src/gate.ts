import { TooManyRequestsError } from './errors.js';

/**
 * The concurrency gate: at most `limit` requests in work at once, up to `queueSize` more waiting
 * in arrival order for at most `maxWaitMs`; past either bound the request is refused with 429 and
 * a `Retry-After` estimated from how long recent requests held a slot.
 */

export interface GateOptions {
  readonly limit: number;
  readonly queueSize: number;
  readonly maxWaitMs: number;
}

export type GateRejection = 'queue_full' | 'queue_timeout';

interface Waiter {
  readonly resolve: (release: () => void) => void;
  readonly reject: (error: unknown) => void;
  readonly cleanup: () => void;
}

export class ConcurrencyGate {
  readonly limit: number;
  readonly queueSize: number;
  readonly maxWaitMs: number;
  private active = 0;
  private readonly waiters: Waiter[] = [];
  /** Exponentially weighted mean of how long a slot is held, in ms. */
  private meanHoldMs = 1000;
  private readonly rejectionListeners: ((reason: GateRejection) => void)[] = [];

  constructor(options: GateOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 1)
      throw new RangeError('gate limit must be >= 1');
    this.limit = options.limit;
    this.queueSize = options.queueSize;
    this.maxWaitMs = options.maxWaitMs;
  }

  get running(): number {
    return this.active;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  onRejection(listener: (reason: GateRejection) => void): void {
    this.rejectionListeners.push(listener);
  }

  /**
   * Waits for a slot. Resolves to the function that gives it back (call it exactly once; later
   * calls do nothing). Rejects with 429 when the queue is full or the wait is too long, or with
   * `signal.reason` when the caller gives up first.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.active < this.limit && this.waiters.length === 0) {
      this.active += 1;
      return Promise.resolve(this.releaser());
    }
    if (this.waiters.length >= this.queueSize) {
      return Promise.reject(this.reject('queue_full'));
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        remove();
        reject(this.reject('queue_timeout'));
      }, this.maxWaitMs);
      const onAbort = (): void => {
        remove();
        reject(signal?.reason as Error);
      };
      const waiter: Waiter = {
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      const remove = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        waiter.cleanup();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Seconds a client should wait before trying again, from the queue ahead and recent hold times. */
  retryAfterSeconds(): number {
    const ahead = this.waiters.length + 1;
    const seconds = (ahead * this.meanHoldMs) / this.limit / 1000;
    return Math.min(60, Math.max(1, Math.ceil(seconds)));
  }

  private releaser(): () => void {
    const started = performance.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.meanHoldMs = 0.8 * this.meanHoldMs + 0.2 * (performance.now() - started);
      const next = this.waiters.shift();
      if (next === undefined) {
        this.active -= 1;
        return;
      }
      next.cleanup();
      next.resolve(this.releaser()); // the slot passes straight to the next in line
    };
  }

  private reject(reason: GateRejection): TooManyRequestsError {
    for (const listener of this.rejectionListeners) listener(reason);
    const message =
      reason === 'queue_full'
        ? `Too many requests: ${this.limit} in work and ${this.waiters.length} waiting (the limit); try again later`
        : `Too many requests: no slot became free within ${this.maxWaitMs} ms; try again later`;
    return new TooManyRequestsError(message, this.retryAfterSeconds());
  }
}
