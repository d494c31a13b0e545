/**
 * Failed sign-ins counted in a sliding window, per key (username + client address, and client
 * address alone). Past `maxFailures` in `windowMs` a key is blocked until its oldest failure leaves
 * the window. A success clears the key. The number of keys held is capped (oldest forgotten first),
 * so a flood of made-up usernames cannot grow memory without bound.
 *
 * A try in progress (`begin` … `end`) counts as a failure until it ends: a burst of concurrent
 * tries, all checked before any of them failed, still gets no more than `maxFailures` password
 * checks.
 */

/** What a key blocked only by tries still in progress is told to wait: they end within a check. */
const IN_PROGRESS_WAIT_MS = 1000;

export interface FailureWindowOptions {
  readonly maxFailures: number;
  readonly windowMs: number;
  readonly maxKeys: number;
}

export class FailureWindow {
  /** Failure times (epoch ms, oldest first) per key; insertion order = least recently failed first. */
  private readonly failures = new Map<string, number[]>();
  /** Tries begun and not yet ended, per key (bounded by the requests in flight). */
  private readonly inProgress = new Map<string, number>();

  constructor(private readonly options: FailureWindowOptions) {}

  get size(): number {
    return this.failures.size;
  }

  /** Milliseconds until `key` may try again; 0 when it may now. */
  blockedFor(key: string, now: number): number {
    const times = this.recent(key, now);
    const max = this.options.maxFailures;
    if (times.length >= max) {
      const oldest = times[times.length - max] ?? now;
      return Math.max(1, oldest + this.options.windowMs - now);
    }
    return times.length + (this.inProgress.get(key) ?? 0) >= max ? IN_PROGRESS_WAIT_MS : 0;
  }

  /**
   * Starts a try for `key` when it may try now (answers 0; `end` must follow), else answers the
   * milliseconds to wait and starts nothing.
   */
  begin(key: string, now: number): number {
    const wait = this.blockedFor(key, now);
    if (wait === 0) this.inProgress.set(key, (this.inProgress.get(key) ?? 0) + 1);
    return wait;
  }

  /** Ends a try `begin` started; a failed one is counted. */
  end(key: string, now: number, failed: boolean): void {
    const left = (this.inProgress.get(key) ?? 0) - 1;
    if (left > 0) this.inProgress.set(key, left);
    else this.inProgress.delete(key);
    if (failed) this.fail(key, now);
  }

  fail(key: string, now: number): void {
    const times = this.recent(key, now);
    times.push(now);
    // Only the last maxFailures matter for blocking.
    if (times.length > this.options.maxFailures) times.splice(0, times.length - this.options.maxFailures);
    this.failures.delete(key);
    this.failures.set(key, times);
    while (this.failures.size > this.options.maxKeys) {
      const oldest = this.failures.keys().next();
      if (oldest.done === true) break;
      this.failures.delete(oldest.value);
    }
  }

  succeed(key: string): void {
    this.failures.delete(key);
  }

  private recent(key: string, now: number): number[] {
    const times = this.failures.get(key);
    if (times === undefined) return [];
    const fresh = times.filter((t) => now - t < this.options.windowMs);
    if (fresh.length === 0) this.failures.delete(key);
    else if (fresh.length !== times.length) this.failures.set(key, fresh);
    return fresh;
  }
}
