import { performance } from 'node:perf_hooks';

/**
 * Paces a streamed reply's writes: the first text goes out at once, and after it a stream writes
 * at most once per `intervalMs`, with everything generated meanwhile in one chunk. Each write wakes
 * the client and costs the service's event loop a socket write and an SSE frame; on a CPU node
 * that work takes cycles from the decode running beside it (services/llm/README.md, "Speed").
 * Nothing is lost or reordered: `flush` sends what is held before the stream's last chunk.
 * An interval of 0 writes every piece as it comes.
 */
export class StreamPacer {
  private held = '';
  private lastWrite = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly write: (text: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  push(text: string): void {
    if (text === '') return;
    if (this.intervalMs === 0) {
      this.write(text); // unpaced: nothing to hold, no clock to read on every token
      return;
    }
    this.held += text;
    if (this.timer !== undefined) return;
    const wait = this.lastWrite + this.intervalMs - this.now();
    if (wait <= 0) {
      this.flush();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, wait);
  }

  /** Writes what is held now. */
  flush(): void {
    this.cancel();
    if (this.held === '') return;
    const text = this.held;
    this.held = '';
    this.lastWrite = this.now();
    this.write(text);
  }

  /** Drops a pending write (the stream ended without its reply). */
  cancel(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
