/**
 * One outbound call's abort signal: the caller's signal (the route's deadline, the client leaving)
 * or the call's own timer, whichever comes first, told apart afterwards (`expired`). A plain timer
 * and one listener, cheaper than `AbortSignal.timeout` plus `AbortSignal.any` on every call. The
 * timer can be re-armed, so a streamed body can be given an idle deadline between its events.
 */
export class CallDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort = (): void => this.controller.abort(this.caller?.reason);
  /** The timer fired (as opposed to the caller aborting). */
  expired = false;
  /** Milliseconds the timer was last armed with. */
  ms: number;

  constructor(
    private readonly caller: AbortSignal | undefined,
    ms: number,
  ) {
    this.ms = ms;
    if (caller?.aborted === true) this.controller.abort(caller.reason);
    else caller?.addEventListener('abort', this.onAbort, { once: true });
    this.arm(ms);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The caller's own signal aborted (not the timer). */
  get callerAborted(): boolean {
    return this.caller?.aborted === true;
  }

  /**
   * (Re)starts the timer: the call is aborted, and counts as timed out, unless paused or re-armed
   * within `ms` (default: the last value). `Infinity` arms nothing.
   */
  arm(ms: number = this.ms): void {
    this.pause();
    this.ms = ms;
    if (!Number.isFinite(ms) || this.controller.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.expired = true;
      this.controller.abort(new Error(`deadline of ${ms} ms`));
    }, ms);
  }

  /** Stops the timer; the caller's signal still aborts. */
  pause(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Stops the timer and forgets the caller's signal: the call is over. */
  release(): void {
    this.pause();
    this.caller?.removeEventListener('abort', this.onAbort);
  }

  /** Aborts the call now (and releases). */
  abort(reason?: unknown): void {
    this.release();
    this.controller.abort(reason);
  }
}

/** What aborting `signal` throws: its reason when that is an error. */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}
