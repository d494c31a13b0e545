/**
 * The reconcile work queue, modelled on client-go's: a key is queued at most once (adding it again
 * while it waits does nothing), never processed by two workers at once (added while in process, it
 * is processed again afterwards), failures come back after a per-key exponential backoff, and
 * `addAfter` schedules a look later (e.g. to re-check a rollout). Level-triggered: the queue holds
 * keys, never events.
 */

export interface QueueMetrics {
  depth(n: number): void;
  added(): void;
  retried(): void;
  /** Seconds a key waited in the queue before a worker took it. */
  queued(seconds: number): void;
  /** Seconds a worker held a key. */
  worked(seconds: number): void;
}

export interface QueueOptions {
  /** First retry delay; doubles per consecutive failure of a key. client-go: 5 ms. */
  readonly baseDelayMs?: number;
  /** Longest retry delay. client-go: 1000 s; 5 min suits a cluster operator better. */
  readonly maxDelayMs?: number;
  readonly metrics?: QueueMetrics;
  /** Clock in ms, for tests. */
  readonly now?: () => number;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queuedAt = new Map<string, number>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; due: number }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly now: () => number;

  constructor(private readonly options: QueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
    this.now = options.now ?? (() => performance.now());
  }

  get length(): number {
    return this.queue.length;
  }

  /** Queues `key` unless it is already waiting; if a worker holds it, it runs again afterwards. */
  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queuedAt.has(key)) return;
    this.options.metrics?.added();
    const waiter = this.waiters.shift();
    if (waiter !== undefined) {
      this.processing.add(key);
      this.options.metrics?.queued(0);
      waiter(key);
      return;
    }
    this.queue.push(key);
    this.queuedAt.set(key, this.now());
    this.options.metrics?.depth(this.queue.length);
  }

  /** Queues `key` after `ms` (the earliest of several pending schedules wins). */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const due = this.now() + ms;
    const existing = this.timers.get(key);
    if (existing !== undefined) {
      if (existing.due <= due) return; // the earlier schedule stands
      clearTimeout(existing.timer);
    }
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { timer, due });
  }

  /** Queues `key` after its backoff: base × 2^(failures so far), capped. */
  addRateLimited(key: string): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.options.metrics?.retried();
    this.addAfter(key, this.backoffMs(failures));
  }

  backoffMs(failures: number): number {
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(failures, 40));
  }

  /** Clears a key's failure count after it reconciled cleanly. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** The next key to work on; `undefined` once shut down. Call `done(key)` when finished. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      const at = this.queuedAt.get(key) ?? this.now();
      this.queuedAt.delete(key);
      this.processing.add(key);
      this.options.metrics?.depth(this.queue.length);
      this.options.metrics?.queued((this.now() - at) / 1000);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string, workedSeconds?: number): void {
    this.processing.delete(key);
    if (workedSeconds !== undefined) this.options.metrics?.worked(workedSeconds);
    if (this.dirty.delete(key)) this.add(key);
  }

  /** Stops handing out keys; workers waiting in `get()` receive `undefined`. */
  shutdown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }
}
