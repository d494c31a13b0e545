import type { LlamaContext, LlamaContextSequence, Token } from 'node-llama-cpp';

/**
 * The context's sequences, one per concurrency slot, created once and reused. A request takes the
 * idle sequence that already holds the longest prefix of its prompt (a shared system prompt, the
 * earlier turns of a conversation), keeps those tokens in the KV cache and evaluates only the rest,
 * as llama-server's prompt cache does.
 *
 * Why not a fresh sequence per request: llama.cpp keeps one KV stream per sequence id, and a batch
 * spanning ids far apart (a fresh request gets the next unused id) ran at ~0.65x the speed of one
 * over ids 0..n-1. And why this waits for lockstep: erasing a sequence's tokens takes the context
 * lock, which node-llama-cpp's batch loop holds while any generation it drives is queued; under
 * the lockstep driver nothing is queued between steps, so the erase is immediate (<1 ms).
 */
export class SequencePool {
  private readonly idle: LlamaContextSequence[];
  private readonly busy = new Set<LlamaContextSequence>();
  private readonly waiters: (() => void)[] = [];

  constructor(context: LlamaContext, size: number) {
    this.idle = Array.from({ length: size }, () => context.getSequence());
  }

  /** Tokens held by the sequences requests are using. */
  get tokensInUse(): number {
    let sum = 0;
    for (const sequence of this.busy) sum += sequence.nextTokenIndex;
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
  ): Promise<{ sequence: LlamaContextSequence; start: number }> {
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
    let best = this.idle[0] as LlamaContextSequence;
    let bestShared = -1;
    for (const sequence of this.idle) {
      const shared = sequence.compareContextTokens([...prompt]).firstDifferentIndex;
      if (shared > bestShared) {
        best = sequence;
        bestShared = shared;
      }
    }
    const sequence = best;
    this.idle.splice(this.idle.indexOf(sequence), 1);
    this.busy.add(sequence);
    try {
      const keep = Math.min(bestShared, prompt.length - 1);
      if (keep === 0) await sequence.clearHistory();
      else if (sequence.nextTokenIndex > keep) {
        await sequence.eraseContextTokenRanges([{ start: keep, end: sequence.nextTokenIndex }]);
      }
      return { sequence, start: sequence.nextTokenIndex };
    } catch (error) {
      this.release(sequence);
      throw error;
    }
  }

  /** Gives a sequence back (its tokens stay, for the next prompt that shares them). */
  release(sequence: LlamaContextSequence): void {
    if (!this.busy.delete(sequence)) return;
    this.idle.push(sequence);
    // Every waiter looks again (one may have given up on abort).
    for (const wake of this.waiters.splice(0)) wake();
  }
}
