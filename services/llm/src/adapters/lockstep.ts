import type { Token } from 'node-llama-cpp';
import { tokenArray, type NativeContext, type NativeSampler, type SamplerConfig } from './native.js';
import type { Sequence } from './sequence-pool.js';

/**
 * Steps every generation in work together, as llama-server's loop does: each step puts every
 * generation's next token (or a new one's prompt, up to the batch size) into one batch, decodes it
 * once, samples each generation's token, hands it over, and goes again. A new generation joins at
 * the next step. The calls are the native addon's (native.ts): jobs on libuv's pool, the decode,
 * then the samples side by side, queued with the decode where the pool has one thread
 * (`LockstepOptions.samplesBehindDecode`), and nothing else queued in between. What a step's tokens
 * produce for the clients (stream writes, metrics) is handed on while the next step's decode or
 * sampling runs (`LockstepOptions.output`).
 */

export interface Stepper {
  /** The sequence it evaluates on; its `tokens` are kept in step with the KV cache here. */
  readonly sequence: Sequence;
  readonly sampler: NativeSampler;
  /**
   * The sampler's settings for the next token (penalties count the tokens so far). The same object
   * while they do not change: the loop applies it to the sampler only when it is a new one.
   */
  samplerConfig(): SamplerConfig;
  /**
   * Takes the next token, or the error that stopped its generation. Returns false when the
   * generation is over (it is then dropped and `close` is called).
   */
  take(token: Token | Error): boolean;
  /** Hands the output of the tokens taken so far on (called while the next decode runs). */
  flush(): void;
  /** True when it must be dropped without another step (its request was aborted). */
  readonly cancelled: boolean;
  /** Ends the generation: frees what it holds and settles its request if nothing else did. Once. */
  close(): void;
}

interface Planned {
  readonly stepper: Stepper;
  readonly tokens: readonly Token[];
  /** Whether the step ends its pending tokens, so a token is sampled after it. */
  readonly sample: boolean;
  logitIndex: number;
}

export interface LockstepOptions {
  /** Tokens one decode may take (the context's batch size). */
  readonly batchSize: number;
  /**
   * When the last step's output goes to the clients. `decode`: while the next decode runs, which
   * suits a GPU decode (it leaves the CPU free). `sampling`: once a step that generates one token
   * per sequence is decoded, while its tokens are sampled, which suits a CPU decode: that decode
   * runs on every core given to llama.cpp, and event-loop work beside it slows all of its threads,
   * while sampling runs on one. A step that evaluates a prompt still hands the output on during
   * its decode, so a long prompt does not hold the other streams' text back.
   */
  readonly output: 'decode' | 'sampling';
  /**
   * Queue a step's samples together with its decode. True only where libuv's pool has one thread:
   * its jobs then run in the order they were queued, so each sample runs the moment the decode
   * ends, on the logits it left, without a round trip through the event loop first. With more
   * threads a sample could start beside the decode, so the loop waits for the decode instead.
   */
  readonly samplesBehindDecode: boolean;
  /** Positions a sequence has. */
  readonly contextSize: number;
  /** Called for each sequence of a step whose decode failed: its cache is not known any more. */
  readonly onDecodeError: (sequence: Sequence) => void;
}

export class Lockstep {
  /** Generations in work and the tokens each has left to evaluate. */
  private readonly active = new Map<Stepper, Token[]>();
  /** The settings each sampler has now (applying them reads every field through the addon). */
  private readonly applied = new WeakMap<NativeSampler, SamplerConfig>();
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private stopped: Error | undefined;
  private steps = 0;
  private stepped = 0;

  constructor(
    private readonly native: NativeContext,
    private readonly options: LockstepOptions,
  ) {}

  /** Generations in work. */
  get size(): number {
    return this.active.size;
  }

  /** Steps taken (each one shared batch) and the generations they stepped, since start. */
  get stats(): { readonly steps: number; readonly sequences: number } {
    return { steps: this.steps, sequences: this.stepped };
  }

  /** Starts a generation: `tokens` (at least one) are evaluated from its sequence's end on. */
  add(stepper: Stepper, tokens: readonly Token[]): void {
    if (this.stopped !== undefined) {
      try {
        stepper.take(this.stopped);
      } finally {
        stepper.close();
      }
      return;
    }
    this.active.set(stepper, [...tokens]);
    if (!this.running) {
      this.running = true;
      this.loop = this.run();
    }
  }

  /**
   * Ends every generation with `reason` at the next step and resolves once no decode is in
   * flight (the context may then be freed). Generations added later end at once.
   */
  async stop(reason: Error): Promise<void> {
    this.stopped = reason;
    // With a step in flight the loop ends them once it is back (a sampler must outlive its step).
    if (!this.running) for (const stepper of [...this.active.keys()]) this.finish(stepper, reason);
    await this.loop;
  }

  /**
   * Steps until no generation is left. One added during a step joins the next; the loop ends only
   * when the set is empty, and `add` starts a new one after that.
   */
  private async run(): Promise<void> {
    await Promise.resolve();
    try {
      while (this.active.size > 0) {
        if (this.stopped !== undefined) {
          for (const stepper of [...this.active.keys()]) this.finish(stepper, this.stopped);
          break;
        }
        for (const stepper of [...this.active.keys()]) if (stepper.cancelled) this.drop(stepper);
        const plan = this.plan();
        if (plan.length === 0) break;
        await this.step(plan);
      }
    } finally {
      this.running = false;
    }
  }

  /** This step's batch: every generating sequence's token first, then prompts as room allows. */
  private plan(): Planned[] {
    const entries = [...this.active].sort(([, a], [, b]) => a.length - b.length);
    const plan: Planned[] = [];
    let room = this.options.batchSize;
    for (const [stepper, pending] of entries) {
      if (pending.length === 0) {
        this.finish(stepper, new Error('a generation had nothing left to evaluate'));
        continue;
      }
      const count = Math.min(pending.length, room);
      if (count === 0) continue;
      if (stepper.sequence.tokens.length + count > this.options.contextSize) {
        this.finish(stepper, new Error(`sequence ${String(stepper.sequence.id)} is full`));
        continue;
      }
      plan.push({
        stepper,
        tokens: pending.slice(0, count),
        sample: count === pending.length,
        logitIndex: -1,
      });
      room -= count;
    }
    return plan;
  }

  private async step(plan: readonly Planned[]): Promise<void> {
    const { native } = this;
    let flushDuringSampling = false;
    let queued: Promise<(Token | Error)[]> | undefined;
    try {
      native.initBatch(plan.reduce((sum, p) => sum + p.tokens.length, 0));
      for (const p of plan) {
        const { sequence } = p.stepper;
        const logits = p.sample ? Uint32Array.of(p.tokens.length - 1) : new Uint32Array(0);
        const indexes = native.addToBatch(sequence.id, sequence.tokens.length, tokenArray(p.tokens), logits);
        if (p.sample) p.logitIndex = indexes[0] as number;
      }
      const decoding = native.decodeBatch();
      if (this.options.samplesBehindDecode) queued = this.sampleAll(plan.filter((p) => p.sample));
      // The decode runs on libuv's pool: the last step's output goes out meanwhile, or while this
      // step's tokens are sampled (LockstepOptions.output).
      flushDuringSampling = this.options.output === 'sampling' && plan.every((p) => p.tokens.length === 1);
      if (!flushDuringSampling) for (const p of plan) flushQuietly(p.stepper);
      await decoding;
    } catch (error) {
      // Samples queued behind a failed decode still run: their samplers are freed only after.
      await queued;
      for (const p of plan) {
        this.options.onDecodeError(p.stepper.sequence);
        this.finish(p.stepper, asError(error));
      }
      return;
    }
    this.steps++;
    this.stepped += plan.length;
    for (const p of plan) {
      p.stepper.sequence.tokens.push(...p.tokens);
      this.active.get(p.stepper)?.splice(0, p.tokens.length);
    }
    // Samples queued behind the decode are under way for every finished prompt; otherwise only the
    // generations still wanted are sampled, now.
    const sampling = plan.filter((p) => p.sample && (queued !== undefined || !p.stepper.cancelled));
    const samples = queued ?? this.sampleAll(sampling);
    if (flushDuringSampling) for (const p of plan) flushQuietly(p.stepper);
    const tokens = await samples;
    sampling.forEach((p, i) => {
      const token = tokens[i] as Token | Error;
      if (p.stepper.cancelled) {
        this.drop(p.stepper);
        return;
      }
      let more = false;
      try {
        more = p.stepper.take(token);
      } catch {
        // A stepper settles its own request; `close` rejects it if `take` could not.
      }
      if (more && !(token instanceof Error)) this.active.get(p.stepper)?.push(token);
      else this.drop(p.stepper);
    });
  }

  /** Each one's next token, sampled side by side (never rejects: a failure is that one's Error). */
  private sampleAll(sampling: readonly Planned[]): Promise<(Token | Error)[]> {
    return Promise.all(sampling.map((p) => this.sample(p)));
  }

  private async sample(p: Planned): Promise<Token | Error> {
    try {
      const { sampler } = p.stepper;
      const config = p.stepper.samplerConfig();
      if (this.applied.get(sampler) !== config) {
        sampler.applyConfig(config);
        this.applied.set(sampler, config);
      }
      const token = await this.native.sampleToken(p.logitIndex, sampler);
      return token < 0 ? new Error('llama.cpp sampled no token') : (token as Token);
    } catch (error) {
      return asError(error);
    }
  }

  private finish(stepper: Stepper, error: Error): void {
    try {
      stepper.take(error);
    } finally {
      this.drop(stepper);
    }
  }

  private drop(stepper: Stepper): void {
    if (!this.active.delete(stepper)) return;
    stepper.close();
  }
}

function flushQuietly(stepper: Stepper): void {
  try {
    stepper.flush();
  } catch {
    // A callback's failure is the request's own; the step goes on for the others.
  }
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));
