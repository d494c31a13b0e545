import { describe, expect, it } from '@jest/globals';
import type { Token } from 'node-llama-cpp';
import { Lockstep, type Stepper } from '../../services/llm/src/adapters/lockstep.js';
import type { NativeContext, NativeSampler, SamplerConfig } from '../../services/llm/src/adapters/native.js';
import type { Sequence } from '../../services/llm/src/adapters/sequence-pool.js';

// The step loop's own rules, on a recording stand-in for the addon (the real addon runs in
// engine-reference.test.ts; a failing decode and a decode held in flight cannot be had from it on
// demand). Each sampled token here is the batch position it was sampled at plus 1000.

interface Call {
  readonly sequence: number;
  readonly first: number;
  readonly tokens: number[];
  readonly logits: number[];
}

class RecordingContext implements NativeContext {
  readonly batches: Call[][] = [];
  /** Decodes to fail, by number (1-based). */
  readonly failing = new Set<number>();
  /** Set to hold the next decode until `release` is called. */
  hold = false;
  release: (() => void) | undefined;
  /** Samples asked for and not yet done (queued or running). */
  pendingSamples = 0;
  /** For each sample asked for: whether a decode was then queued or running ahead of it. */
  readonly behindDecode: boolean[] = [];
  private pendingDecodes = 0;
  private size = 0;
  /** A decode is queued or running. */
  get inFlight(): boolean {
    return this.pendingDecodes > 0;
  }
  /** libuv's pool of one thread: its jobs run one at a time, in the order they were queued. */
  private pool: Promise<unknown> = Promise.resolve();

  private queue<T>(job: () => Promise<T>): Promise<T> {
    const result = this.pool.then(job);
    this.pool = result.catch(() => undefined);
    return result;
  }

  initBatch(size: number): void {
    this.size = size;
    this.batches.push([]);
  }
  addToBatch(sequence: number, first: number, tokens: Uint32Array, logits: Uint32Array): Uint32Array {
    const batch = this.batches.at(-1) as Call[];
    const offset = batch.reduce((n, c) => n + c.tokens.length, 0);
    if (offset + tokens.length > this.size) throw new Error('batch overflow');
    batch.push({ sequence, first, tokens: [...tokens], logits: [...logits] });
    return Uint32Array.from(logits, (i) => offset + i);
  }
  decodeBatch(): Promise<void> {
    const number = this.batches.length;
    this.pendingDecodes++;
    return this.queue(async () => {
      try {
        if (this.hold) await new Promise<void>((resolve) => (this.release = resolve));
        await new Promise((r) => setImmediate(r));
        if (this.failing.has(number)) throw new Error('Eval has failed');
      } finally {
        this.pendingDecodes--;
      }
    });
  }
  sampleToken(index: number): Promise<number> {
    this.behindDecode.push(this.pendingDecodes > 0);
    this.pendingSamples++;
    return this.queue(async () => {
      try {
        await new Promise((r) => setImmediate(r));
        return 1000 + index;
      } finally {
        this.pendingSamples--;
      }
    });
  }
  disposeSequence(): void {}
  removeTokenCellsFromSequence(): boolean {
    return true;
  }
  getSequenceKvCacheMinPosition(): number {
    return 0;
  }
}

const sampler: NativeSampler = { applyConfig: () => undefined, dispose: () => undefined };
const config: SamplerConfig = { temperature: 0, minP: 0, topK: 40, topP: 0.95, seed: 1 };

class Recorder implements Stepper {
  readonly sequence: Sequence;
  readonly sampler = sampler;
  readonly taken: (Token | Error)[] = [];
  closed = 0;
  /** Samples still pending in the addon when it was closed (which frees its sampler). */
  pendingAtClose: number[] = [];
  cancelled = false;
  /** For each flush: what `probe` said then (whether a decode or a sample was in flight). */
  readonly flushes: unknown[] = [];
  probe: () => unknown = () => false;
  native: RecordingContext | undefined;
  readonly done: Promise<void>;
  private finished!: () => void;

  constructor(
    id: number,
    private readonly wanted: number,
  ) {
    this.sequence = { id, tokens: [] };
    this.done = new Promise((resolve) => (this.finished = resolve));
  }
  samplerConfig(): SamplerConfig {
    return config;
  }
  take(token: Token | Error): boolean {
    this.taken.push(token);
    return !(token instanceof Error) && this.taken.length < this.wanted;
  }
  flush(): void {
    this.flushes.push(this.probe());
  }
  close(): void {
    this.closed++;
    this.pendingAtClose.push(this.native?.pendingSamples ?? 0);
    this.finished();
  }
}

/** A loop over a fresh stand-in, recording the sequences it forgets after a failed decode. */
function setup(
  contextSize = 100,
  output: 'decode' | 'sampling' = 'decode',
  samplesBehindDecode = false,
): { native: RecordingContext; lockstep: Lockstep; cleared: number[] } {
  const native = new RecordingContext();
  const cleared: number[] = [];
  const lockstep = new Lockstep(native, {
    batchSize: 8,
    output,
    samplesBehindDecode,
    contextSize,
    onDecodeError: (s) => cleared.push(s.id),
  });
  return { native, lockstep, cleared };
}

const tokens = (n: number, from = 1): Token[] => Array.from({ length: n }, (_, i) => (from + i) as Token);

describe('Lockstep', () => {
  it('puts every generating token first, then prompts as the batch allows, and samples only a finished prompt', async () => {
    const { native, lockstep, cleared } = setup();
    const a = new Recorder(0, 4);
    const b = new Recorder(1, 2);
    a.probe = b.probe = () => native.inFlight;
    lockstep.add(a, tokens(3));
    await new Promise((r) => setImmediate(r));
    lockstep.add(b, tokens(12, 50));
    await Promise.all([a.done, b.done]);

    // Step 1: a's prompt alone. Step 2: a's token, then 7 of b's 12 prompt tokens (no logits).
    // Step 3: a's token, b's last 5 (logits on the last). Then a's last token with b's.
    expect(
      native.batches.map((batch) => batch.map((c) => [c.sequence, c.first, c.tokens.length, c.logits])),
    ).toEqual([
      [[0, 0, 3, [2]]],
      [
        [0, 3, 1, [0]],
        [1, 0, 7, []],
      ],
      [
        [0, 4, 1, [0]],
        [1, 7, 5, [4]],
      ],
      [
        [0, 5, 1, [0]],
        [1, 12, 1, [0]],
      ],
    ]);
    expect(a.taken).toEqual([1002, 1000, 1000, 1000]);
    expect(b.taken).toEqual([1005, 1001]);
    // Each sequence holds what was decoded on it: the prompt and every token but the last sampled.
    expect(a.sequence.tokens).toEqual([1, 2, 3, 1002, 1000, 1000]);
    expect(b.sequence.tokens).toEqual([...tokens(12, 50), 1005]);
    expect([a.closed, b.closed, cleared]).toEqual([1, 1, []]);
    // Each step hands the last step's output on while its own decode is in flight.
    expect(a.flushes).toEqual([true, true, true, true]);
    expect(b.flushes).toEqual([true, true, true]);
    expect(lockstep.stats).toEqual({ steps: 4, sequences: 7 });
  });

  it('hands the output on while the samples are taken on a CPU, but during a decode that takes a prompt', async () => {
    const { native, lockstep } = setup(100, 'sampling');
    const a = new Recorder(0, 4);
    const b = new Recorder(1, 2);
    // For each flush: a decode in flight (D), a sample in flight (S), or neither (-).
    const probe = (): string => (native.inFlight ? 'D' : native.pendingSamples > 0 ? 'S' : '-');
    a.probe = b.probe = probe;
    lockstep.add(a, tokens(3));
    await new Promise((r) => setImmediate(r));
    lockstep.add(b, tokens(12, 50));
    await Promise.all([a.done, b.done]);
    // Steps 2 and 3 take b's prompt: the output goes out during their decodes. Step 4 generates
    // one token per sequence: it goes out while that step samples. The last flush of each ends it.
    expect(a.flushes).toEqual(['D', 'D', 'D', 'S']);
    expect(b.flushes).toEqual(['D', 'D', 'S']);
    expect(a.taken).toEqual([1002, 1000, 1000, 1000]);
  });

  it('ends the generations of a failed decode with its error and forgets their sequences, then goes on', async () => {
    const { native, lockstep, cleared } = setup();
    native.failing.add(2);
    const a = new Recorder(0, 5);
    lockstep.add(a, tokens(2));
    await a.done;
    expect(a.taken).toHaveLength(2);
    expect((a.taken[1] as Error).message).toBe('Eval has failed');
    expect([a.closed, cleared]).toEqual([1, [0]]);

    const b = new Recorder(1, 2);
    lockstep.add(b, tokens(2));
    await b.done;
    expect(b.taken).toEqual([1001, 1000]);
  });

  it('ends a generation that would overflow its sequence, and drops a cancelled one without sampling it', async () => {
    const { native, lockstep } = setup(4);
    const full = new Recorder(0, 10);
    lockstep.add(full, tokens(3));
    await full.done;
    // 3 prompt tokens, then one generated token fills the 4 positions: the next one cannot go in.
    expect(full.taken.slice(0, 2)).toEqual([1002, 1000]);
    expect((full.taken[2] as Error).message).toBe('sequence 0 is full');

    const cancelled = new Recorder(1, 10);
    native.hold = true;
    lockstep.add(cancelled, tokens(2));
    while (native.release === undefined) await new Promise((r) => setImmediate(r));
    cancelled.cancelled = true;
    native.hold = false;
    native.release();
    await cancelled.done;
    expect([cancelled.taken, cancelled.closed]).toEqual([[], 1]);
  });

  it('stops only once the step in flight is back, ending every generation, and refuses new ones', async () => {
    const { native, lockstep } = setup();
    const a = new Recorder(0, 100);
    native.hold = true;
    lockstep.add(a, tokens(2));
    while (native.release === undefined) await new Promise((r) => setImmediate(r));
    let stopped = false;
    const stopping = lockstep.stop(new Error('unloading')).then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    // The decode is still in flight: nothing is closed, and stop has not resolved.
    expect([native.inFlight, a.closed, stopped]).toEqual([true, 0, false]);
    native.release();
    await stopping;
    expect(native.inFlight).toBe(false);
    expect(a.closed).toBe(1);
    expect((a.taken.at(-1) as Error).message).toBe('unloading');

    const late = new Recorder(1, 2);
    lockstep.add(late, tokens(1));
    expect([(late.taken[0] as Error).message, late.closed]).toEqual(['unloading', 1]);
  });
  it('queues the samples behind their decode where the pool has one thread, and takes the same tokens', async () => {
    const run = async (behind: boolean) => {
      const { native, lockstep } = setup(100, 'sampling', behind);
      const a = new Recorder(0, 4);
      const b = new Recorder(1, 2);
      a.probe = b.probe = () => (native.inFlight ? 'D' : native.pendingSamples > 0 ? 'S' : '-');
      lockstep.add(a, tokens(3));
      await new Promise((r) => setImmediate(r));
      lockstep.add(b, tokens(12, 50));
      await Promise.all([a.done, b.done]);
      return {
        batches: native.batches,
        taken: [a.taken, b.taken],
        flushes: [a.flushes, b.flushes],
        behind: native.behindDecode,
      };
    };
    const queued = await run(true);
    const after = await run(false);
    expect(queued.batches).toEqual(after.batches);
    expect(queued.taken).toEqual([
      [1002, 1000, 1000, 1000],
      [1005, 1001],
    ]);
    expect(queued.taken).toEqual(after.taken);
    // The output still goes out during a prompt's decode, and during the samples of a step of one
    // token per sequence (which run once the decode is back).
    expect(queued.flushes).toEqual([
      ['D', 'D', 'D', 'S'],
      ['D', 'D', 'S'],
    ]);
    expect(queued.flushes).toEqual(after.flushes);
    // Six samples: each asked for while its decode was still queued or running, or only after.
    expect(queued.behind).toEqual([true, true, true, true, true, true]);
    expect(after.behind).toEqual([false, false, false, false, false, false]);
  });

  it('ends the generations of a failed decode only once the samples queued behind it are done', async () => {
    const { native, lockstep, cleared } = setup(100, 'sampling', true);
    native.failing.add(2);
    const a = new Recorder(0, 5);
    a.native = native;
    lockstep.add(a, tokens(2));
    await a.done;
    expect(a.taken).toHaveLength(2);
    expect((a.taken[1] as Error).message).toBe('Eval has failed');
    // Closing frees the sampler: no sample of it may still be queued or running then.
    expect([a.closed, a.pendingAtClose, cleared]).toEqual([1, [0], [0]]);

    const b = new Recorder(1, 2);
    lockstep.add(b, tokens(2));
    await b.done;
    expect(b.taken).toEqual([1001, 1000]);
  });

  it('drops a generation cancelled during its decode once the sample queued behind it is done', async () => {
    const { native, lockstep } = setup(100, 'sampling', true);
    const cancelled = new Recorder(0, 10);
    cancelled.native = native;
    native.hold = true;
    lockstep.add(cancelled, tokens(2));
    while (native.release === undefined) await new Promise((r) => setImmediate(r));
    expect(native.pendingSamples).toBe(1);
    cancelled.cancelled = true;
    native.hold = false;
    native.release();
    await cancelled.done;
    expect([cancelled.taken, cancelled.closed, cancelled.pendingAtClose]).toEqual([[], 1, [0]]);
  });
});
