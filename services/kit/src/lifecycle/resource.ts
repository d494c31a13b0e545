import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceUnavailableError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ReadinessSignal } from '../readiness.js';

/**
 * Something a service owns and must open before it can work: a model, a store, an engine, a child
 * process, a connection. The kit opens every resource after the server listens (probes answer 503
 * with the resource's reason meanwhile), retries a failed open where the resource says so, and
 * closes them in reverse order on shutdown (docs/architecture.md, "How a service is assembled").
 */

export type ResourceState = 'waiting' | 'opening' | 'ready' | 'failed' | 'stopped';

export interface OpenContext {
  /** Aborted when the service shuts down before the resource opened. */
  readonly signal: AbortSignal;
  /** This resource's readiness condition: `setNotReady(reason)` while waiting on something. */
  readonly readiness: ReadinessSignal;
  readonly logger: Logger;
  /** Marks the resource as opening (from waiting) with this reason. */
  readonly opening: (reason: string) => void;
  /**
   * `pending` (a step that cannot be cancelled: a connection, another resource's `opened()`), or
   * a rejection as soon as the resource is closed first; what `pending` yields after that goes to
   * `discard` (close it there).
   */
  readonly untilClosed: <U>(pending: Promise<U>, discard?: (late: U) => unknown) => Promise<U>;
  /**
   * Says that what this open returned went down (a child process exited, a connection broke): the
   * kit closes it and, with `retry`, opens it again after the next pause; without, it stays failed.
   * Ignored once the resource is closing, or when that value was already lost.
   */
  readonly lost: (error: Error) => void;
}

export interface RetryPolicy {
  /** The pause before the first retry; doubles up to `maxPauseMs`. */
  readonly firstPauseMs?: number;
  readonly maxPauseMs?: number;
  /**
   * A value that stayed open this long before it was lost starts the pauses again from the first
   * (default 60 s); one lost sooner waits longer each time, like a failed open.
   */
  readonly resetAfterMs?: number;
}

export interface ResourceSpec<T> {
  /** What it is, in the log lines and the not-ready reason ("the store", "the model"). */
  readonly name: string;
  /** The reason until it opens or fails (default `starting: <name> opens after the server listens`). */
  readonly startingReason?: string;
  readonly open: (ctx: OpenContext) => Promise<T> | T;
  readonly close?: (value: T) => Promise<void> | void;
  /**
   * Retry a failed open (true: from 250 ms doubling to 30 s), and open again one that was `lost`,
   * while not ready with the error; without it a failed open leaves the service not ready with the
   * error until a restart.
   */
  readonly retry?: boolean | RetryPolicy;
  /**
   * The reason the failure gives, told the pause before the next try where there is one; default
   * `<name> failed to open: <message>`.
   */
  readonly failureReason?: (error: Error, retryInMs?: number) => string;
  /**
   * The service can be ready without it (an engine among several, a model that only adds to what
   * the service serves): its condition does not count toward the service's readiness.
   */
  readonly optional?: boolean;
  /** Fields for the "opened" log line, and warnings to log once it is open. */
  readonly describe?: (value: T) => { fields?: Record<string, unknown>; warnings?: readonly string[] };
}

export class Resource<T> {
  private current: T | undefined;
  private lastError: Error | undefined;
  private stateValue: ResourceState = 'waiting';
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private readonly openedPromise: Promise<T>;
  private resolveOpened!: (value: T) => void;
  private rejectOpened!: (error: Error) => void;
  private readonly attemptedPromise: Promise<void>;
  private resolveAttempted!: () => void;
  /** Failed opens and losses since the pauses last started from the first. */
  private failures = 0;
  /** Bumped by every open and every loss: `lost` from an earlier open does nothing. */
  private generation = 0;
  private openedAt = 0;
  /** `lost` called before its open had returned. */
  private lostWhileOpening: Error | undefined;

  constructor(
    private readonly spec: ResourceSpec<T>,
    private readonly condition: ReadinessSignal,
    private readonly logger: Logger,
  ) {
    this.openedPromise = new Promise<T>((resolve, reject) => {
      this.resolveOpened = resolve;
      this.rejectOpened = reject;
    });
    // A resource nobody awaits must not surface as an unhandled rejection.
    this.openedPromise.catch(() => undefined);
    this.attemptedPromise = new Promise<void>((resolve) => (this.resolveAttempted = resolve));
  }

  get name(): string {
    return this.spec.name;
  }

  get state(): ResourceState {
    return this.stateValue;
  }

  /** Why it is not ready (waiting, opening, failed, or set by the resource itself); `undefined` when it is. */
  get reason(): string | undefined {
    return this.condition.reason;
  }

  /** The open resource, or `undefined` until it is. */
  get value(): T | undefined {
    return this.current;
  }

  /** Why the last attempt to open failed; `undefined` once open (and before any attempt failed). */
  get error(): Error | undefined {
    return this.lastError;
  }

  /** The resource, or 503 with the reason while there is none. */
  require(): T {
    if (this.current === undefined) {
      throw new ServiceUnavailableError(
        `${capitalize(this.spec.name)} is not open: ${this.condition.reason ?? this.stateValue}`,
      );
    }
    return this.current;
  }

  /** Resolves with the resource once it is open; rejects if it fails for good or is closed first. */
  opened(): Promise<T> {
    return this.openedPromise;
  }

  /** Resolves once the first try to open it ended, opened or failed (or it was closed first). */
  attempted(): Promise<void> {
    return this.attemptedPromise;
  }

  /** Starts opening in the background; resolves at once. Idempotent. */
  start(): void {
    this.running ??= this.run();
  }

  /** Resolves when the resource is open or opening gave up. */
  async settled(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    const retry = retryPolicy(this.spec.retry);
    for (;;) {
      if (this.isClosed()) {
        this.rejectOpened(new Error(`${this.spec.name} was closed before it opened`));
        return;
      }
      try {
        await this.openOnce();
        return;
      } catch (error) {
        if (this.stop.signal.aborted) {
          this.rejectOpened(new Error(`${this.spec.name} was closed before it opened`));
          return;
        }
        const err = error instanceof Error ? error : new Error(String(error));
        this.lastError = err;
        const pauseMs = this.fail(err, retry, 'failed to open');
        this.resolveAttempted();
        if (pauseMs === undefined) {
          this.rejectOpened(err);
          return;
        }
        if (!(await this.pause(pauseMs))) {
          this.rejectOpened(new Error(`${this.spec.name} was closed before it opened`));
          return;
        }
      }
    }
  }

  private async openOnce(): Promise<void> {
    const started = performance.now();
    const generation = ++this.generation;
    this.lostWhileOpening = undefined;
    this.stateValue = 'waiting';
    const value = await this.spec.open({
      signal: this.stop.signal,
      readiness: this.condition,
      logger: this.logger,
      opening: (reason) => {
        if (this.stop.signal.aborted) return;
        this.stateValue = 'opening';
        this.condition.setNotReady(reason);
      },
      untilClosed: (pending, discard) => untilAborted(pending, this.stop.signal, this.spec.name, discard),
      lost: (error) => this.lose(generation, error),
    });
    if (this.stop.signal.aborted) {
      await this.spec.close?.(value);
      throw new Error(`${this.spec.name} was closed while it opened`);
    }
    this.current = value;
    this.lastError = undefined;
    this.stateValue = 'ready';
    this.openedAt = performance.now();
    this.condition.setReady();
    this.resolveOpened(value);
    this.resolveAttempted();
    const described = this.spec.describe?.(value) ?? {};
    this.logger.info(
      {
        resource: this.spec.name,
        seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
        ...described.fields,
      },
      `${this.spec.name} opened`,
    );
    for (const warning of described.warnings ?? []) this.logger.warn(warning);
    // Set by `lost` while the open was awaited.
    const lost = this.lostWhileOpening as Error | undefined;
    if (lost !== undefined) this.lose(generation, lost);
  }

  /** The value of open number `generation` went down: close it, and open again where `retry` says. */
  private lose(generation: number, error: Error): void {
    if (generation !== this.generation || this.stop.signal.aborted) return;
    if (this.stateValue !== 'ready') {
      this.lostWhileOpening ??= error;
      return;
    }
    this.generation++;
    const value = this.current as T;
    this.current = undefined;
    this.lastError = error;
    const retry = retryPolicy(this.spec.retry);
    if (retry !== undefined && performance.now() - this.openedAt >= retry.resetAfterMs) this.failures = 0;
    const pauseMs = this.fail(error, retry, 'went down');
    this.running = (async () => {
      try {
        await this.spec.close?.(value);
      } catch (closeError) {
        this.logger.error({ err: closeError, resource: this.spec.name }, `${this.spec.name} failed to close`);
      }
      if (pauseMs !== undefined && (await this.pause(pauseMs))) await this.run();
    })();
  }

  /** Failed to open, or went down: not ready with the reason, logged; the pause before the next try. */
  private fail(
    error: Error,
    retry: Required<RetryPolicy> | undefined,
    what: 'failed to open' | 'went down',
  ): number | undefined {
    this.stateValue = 'failed';
    const pauseMs =
      retry === undefined ? undefined : Math.min(retry.maxPauseMs, retry.firstPauseMs * 2 ** this.failures++);
    this.condition.setNotReady(
      this.spec.failureReason?.(error, pauseMs) ?? `${this.spec.name} ${what}: ${error.message}`,
    );
    const fields = { err: error, resource: this.spec.name };
    if (pauseMs === undefined) this.logger.error(fields, `${this.spec.name} ${what}`);
    else this.logger.error({ ...fields, retryInMs: pauseMs }, `${this.spec.name} ${what}: retrying`);
    return pauseMs;
  }

  /** Waits before the next try; false when the resource was closed meanwhile. */
  private async pause(ms: number): Promise<boolean> {
    try {
      await sleep(ms, undefined, { signal: this.stop.signal });
      return true;
    } catch {
      return false;
    }
  }

  private isClosed(): boolean {
    return this.stop.signal.aborted;
  }

  /** Stops opening, or closes what is open. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stop.abort();
      this.stateValue = 'stopped';
      await this.running;
      this.resolveAttempted();
      const value = this.current;
      this.current = undefined;
      if (value !== undefined) await this.spec.close?.(value);
    })();
    return this.closing;
  }
}

function retryPolicy(retry: ResourceSpec<unknown>['retry']): Required<RetryPolicy> | undefined {
  if (retry === undefined || retry === false) return undefined;
  const given = retry === true ? {} : retry;
  return {
    firstPauseMs: given.firstPauseMs ?? 250,
    maxPauseMs: given.maxPauseMs ?? 30_000,
    resetAfterMs: given.resetAfterMs ?? 60_000,
  };
}

function untilAborted<U>(
  pending: Promise<U>,
  signal: AbortSignal,
  name: string,
  discard: ((late: U) => unknown) | undefined,
): Promise<U> {
  return new Promise<U>((resolve, reject) => {
    const onAbort = (): void => {
      reject(new Error(`${name} was closed while it opened`));
      void pending.then(
        async (late) => {
          await discard?.(late);
        },
        () => undefined,
      );
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
