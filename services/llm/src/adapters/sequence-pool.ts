import type { Token } from 'node-llama-cpp';
import type { NativeContext } from './native.js';

/** One llama.cpp sequence: its id and the tokens its KV cache holds, position by position. */
export interface Sequence {
  readonly id: number;
  readonly tokens: Token[];
}

/**
 * The context's sequences, one per concurrency slot, reused. A request takes the idle sequence
 * that already holds the longest prefix of its prompt (a shared system prompt, the earlier turns of
 * a conversation), keeps those tokens in the KV cache and evaluates only the rest, as
 * llama-server's prompt cache does.
 *
 * Why ids 0..n-1 for ever: llama.cpp keeps one KV stream per sequence id, and a batch spanning ids
 * far apart ran slower than one over ids 0..n-1 (README, "Concurrency and batching").
 *
 * A sliding-window model (Gemma 2 and 3) keeps only the last `swaSize` positions in most layers'
 * cache, so a prefix can be kept only while the window before its end is still there (the rule
 * llama-server applies); otherwise the sequence starts over and the whole prompt is evaluated.
 */
export class SequencePool {
  private readonly idle: Sequence[];
  private readonly busy = new Set<Sequence>();
  private readonly waiters: (() => void)[] = [];

  constructor(
    private readonly native: NativeContext,
    size: number,
    private readonly swaSize: number | undefined,
  ) {
    this.idle = Array.from({ length: size }, (_, id) => ({ id, tokens: [] }));
  }

  /** Tokens held by the sequences requests are using. */
  get tokensInUse(): number {
    let sum = 0;
    for (const sequence of this.busy) sum += sequence.tokens.length;
    return sum;
  }

  /**
   * An idle sequence ready to evaluate `prompt` from `start` on (its first `start` tokens are in
   * the KV cache already; at least the prompt's last token is left to evaluate). Waits while every
   * sequence is busy (only between a request's end and its generation's release).
   */
  async acquire(
    prompt: readonly Token[],
    signal: AbortSignal,
  ): Promise<{ sequence: Sequence; start: number }> {
    while (this.idle.length === 0) {
      if (signal.aborted) throw signal.reason as Error;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.waiters.push(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    if (signal.aborted) throw signal.reason as Error;
    let best = this.idle[0] as Sequence;
    let bestShared = -1;
    for (const sequence of this.idle) {
      const shared = sharedPrefix(sequence.tokens, prompt);
      if (shared > bestShared) {
        best = sequence;
        bestShared = shared;
      }
    }
    this.idle.splice(this.idle.indexOf(best), 1);
    this.busy.add(best);
    this.truncate(best, Math.min(bestShared, prompt.length - 1));
    return { sequence: best, start: best.tokens.length };
  }

  /** Gives a sequence back (its tokens stay, for the next prompt that shares them). */
  release(sequence: Sequence): void {
    if (!this.busy.delete(sequence)) return;
    this.idle.push(sequence);
    // Every waiter looks again (one may have given up on abort).
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Forgets what a sequence holds (after a failed decode its cache is not known). */
  clear(sequence: Sequence): void {
    this.native.disposeSequence(sequence.id);
    sequence.tokens.length = 0;
  }

  /** Keeps the first `keep` tokens of a sequence's cache, or empties it when they cannot be kept. */
  private truncate(sequence: Sequence, keep: number): void {
    if (keep >= sequence.tokens.length) return;
    if (keep <= 0 || !this.native.removeTokenCellsFromSequence(sequence.id, keep, sequence.tokens.length)) {
      this.clear(sequence);
      return;
    }
    sequence.tokens.length = keep;
    if (this.swaSize !== undefined && this.swaSize > 0) {
      // -1: the window holds none of the kept positions any more.
      const oldest = this.native.getSequenceKvCacheMinPosition(sequence.id);
      if (oldest < 0 || oldest > Math.max(0, keep - this.swaSize)) this.clear(sequence);
    }
  }
}

function sharedPrefix(a: readonly Token[], b: readonly Token[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
