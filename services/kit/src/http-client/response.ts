import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { CallDeadline } from './deadline.js';
import type { OutboundOutcome } from './metrics.js';
import { parseEventStream, type SseEvent, type SseParseOptions } from './sse.js';

export interface ResponseHooks {
  /** Maps a failure while reading the body. */
  fail(error: unknown): Error;
  /** The exchange is over: its outcome (the status class when undefined). */
  done(outcome?: OutboundOutcome): void;
}

/**
 * An upstream's answer whose headers arrived. Read its body once (`text()`, `chunks()` or
 * `events()`), or `cancel()` it: until then the call's deadline runs and the connection is held.
 */
export class OutboundResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: IncomingHttpHeaders;
  #settled = false;
  #body: Buffer | undefined;

  constructor(
    private readonly res: IncomingMessage,
    /** Attempts made to get it. */
    readonly attempts: number,
    /** The call's deadline, running until the body ends: re-arm it for an idle deadline. */
    readonly deadline: CallDeadline,
    private readonly hooks: ResponseHooks,
  ) {
    this.status = res.statusCode ?? 0;
    this.ok = this.status >= 200 && this.status < 300;
    this.headers = res.headers;
  }

  header(name: string): string | undefined {
    const value = this.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  /** The body as it arrives; a failure is thrown mapped (the caller's abort as its reason). */
  async *chunks(): AsyncGenerator<Buffer, void, undefined> {
    if (this.#body !== undefined) {
      if (this.#body.length > 0) yield this.#body;
      return;
    }
    let ended = false;
    try {
      for await (const chunk of this.res) yield chunk as Buffer;
      ended = true;
      this.settle(undefined);
    } catch (error) {
      const mapped = this.hooks.fail(error);
      this.settle(undefined);
      throw mapped;
    } finally {
      if (!ended) this.cancel();
    }
  }

  /** The whole body as UTF-8 text. */
  async text(): Promise<string> {
    if (this.#body === undefined) {
      const parts: Buffer[] = [];
      for await (const chunk of this.chunks()) parts.push(chunk);
      this.#body = Buffer.concat(parts);
    }
    return this.#body.toString('utf8');
  }

  /** The body as server-sent events (sse.ts). */
  events(options?: SseParseOptions): AsyncGenerator<SseEvent, void, undefined> {
    return parseEventStream(this.chunks(), options);
  }

  /** Stops reading: closes the connection unless the body had ended, which stops the upstream's work. */
  cancel(): void {
    this.settle(undefined);
    if (!this.res.complete) this.res.destroy();
  }

  private settle(outcome: OutboundOutcome | undefined): void {
    if (this.#settled) return;
    this.#settled = true;
    this.hooks.done(outcome);
  }

  /** The body was read to its end, failed or was cancelled. */
  get settled(): boolean {
    return this.#settled;
  }
}
