import { randomInt } from 'node:crypto';
import { LlamaGrammarEvaluationState, type LlamaGrammar, type LlamaModel, type Token } from 'node-llama-cpp';
import type { StopText } from '../domain/stop-text.js';
import type { FinishReason, GenerationParams, GenerationResult } from '../domain/types.js';
import type { GenerateCallbacks } from './engine.js';
import type { Stepper } from './lockstep.js';
import type { Native, NativeSampler, SamplerConfig } from './native.js';
import type { Sequence } from './sequence-pool.js';

/** Prompt tokens given to the detokenizer as the text the reply continues (spacing, merges). */
const DETOKENIZE_CONTEXT = 8;
/** Tokens held back while they decode to an incomplete UTF-8 character. */
const MAX_PARTIAL_TOKENS = 4;
/** node-llama-cpp's defaults, so that a reply matches what its own `evaluate()` samples. */
const DEFAULT_TOP_K = 40;
const DEFAULT_TOP_P = 0.95;
const MIN_PUNISH_TOKENS = 64;

export interface GenerationOptions {
  readonly model: LlamaModel;
  readonly native: Native;
  readonly sequence: Sequence;
  readonly prompt: readonly Token[];
  /** Prompt tokens the sequence holds already (from an earlier request): evaluation starts here. */
  readonly start: number;
  /** Gives the sequence back; called once the generation has let go of it. */
  readonly release: () => void;
  readonly params: GenerationParams;
  readonly grammar: LlamaGrammar | undefined;
  readonly tokenStops: ReadonlySet<Token>;
  readonly text: StopText;
  readonly callbacks: GenerateCallbacks;
  readonly signal: AbortSignal;
  readonly resolve: (result: GenerationResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * One request's generation on its sequence, stepped by the engine's `Lockstep`: sampling settings,
 * stop tokens and sequences, the token budget, streaming text in whole characters, abort.
 */
export class Generation implements Stepper {
  readonly sequence: Sequence;
  readonly sampler: NativeSampler;
  /** The prompt's tail, then every generated token. */
  private readonly tokens: Token[];
  private readonly promptTail: number;
  /** Tokens whose text is released (the rest decode to an incomplete character so far). */
  private decoded: number;
  /** Output not yet handed to the callbacks (`flush`): tokens counted, text released. */
  private tokensOut = 0;
  private textOut = '';
  private settled = false;
  private readonly onAbort: () => void;
  private readonly config: SamplerConfig;
  private readonly penalties: boolean;
  /** Held here: the addon's state lives as long as this object. */
  private readonly grammarState: LlamaGrammarEvaluationState | undefined;

  constructor(private readonly o: GenerationOptions) {
    this.sequence = o.sequence;
    this.tokens = o.prompt.slice(-DETOKENIZE_CONTEXT);
    this.promptTail = this.tokens.length;
    this.decoded = this.tokens.length;
    this.grammarState =
      o.grammar === undefined
        ? undefined
        : new LlamaGrammarEvaluationState({ model: o.model, grammar: o.grammar });
    this.penalties = o.params.frequencyPenalty !== undefined || o.params.presencePenalty !== undefined;
    this.config = {
      temperature: o.params.temperature,
      minP: 0,
      topK: DEFAULT_TOP_K,
      topP: o.params.topP ?? DEFAULT_TOP_P,
      // Unseeded requests get a seed of their own (node-llama-cpp would take the clock's second).
      seed: o.params.seed === undefined ? randomInt(2 ** 31) : Math.max(0, Math.floor(o.params.seed)),
      ...(this.grammarState === undefined
        ? {}
        : { grammarEvaluationState: o.native.grammarStateOf(this.grammarState) }),
    };
    this.sampler = o.native.createSampler();
    this.onAbort = () => {
      this.settle(() => {
        this.flush();
        o.reject(o.signal.reason);
      });
    };
    if (o.signal.aborted) this.onAbort();
    else o.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  samplerConfig(): SamplerConfig {
    if (!this.penalties) return this.config;
    // OpenAI's penalties count the tokens generated so far.
    const generated = this.tokens.slice(this.promptTail);
    return {
      ...this.config,
      repeatPenalty: 1,
      repeatPenaltyMaxTokens: Math.max(MIN_PUNISH_TOKENS, generated.length),
      repeatPenaltyTokens: Uint32Array.from(generated),
      repeatPenaltyPresencePenalty: this.o.params.presencePenalty ?? 0,
      repeatPenaltyFrequencyPenalty: this.o.params.frequencyPenalty ?? 0,
    };
  }

  /** Tokens generated so far. */
  get completionTokens(): number {
    return this.tokens.length - this.promptTail;
  }

  get cancelled(): boolean {
    return this.settled;
  }

  take(token: Token | Error): boolean {
    if (token instanceof Error) {
      this.settle(() => {
        this.flush();
        this.o.reject(token);
      });
      return false;
    }
    if (this.o.model.isEogToken(token)) return this.finish('stop');
    if (this.o.tokenStops.has(token)) return this.finish('stop');
    this.tokens.push(token);
    this.tokensOut++;
    this.emit(this.decode(false));
    if (this.o.text.hasStopped) return this.finish('stop');
    if (this.completionTokens >= this.o.params.maxTokens) return this.finish('length');
    return true;
  }

  /**
   * Hands the output so far to the callbacks (the stream, the metrics). The loop calls it once the
   * next step's decode or sampling is under way, so that writing to the client overlaps it instead
   * of delaying it; the end of a generation flushes before it settles.
   */
  flush(): void {
    if (this.tokensOut > 0) {
      const count = this.tokensOut;
      this.tokensOut = 0;
      this.o.callbacks.onTokens?.(count);
    }
    if (this.textOut !== '') {
      const text = this.textOut;
      this.textOut = '';
      this.o.callbacks.onText?.(text);
    }
  }

  close(): void {
    this.o.signal.removeEventListener('abort', this.onAbort);
    this.sampler.dispose();
    // The sequence is free before the request's caller hears the result (so its next request
    // finds its prefix cached here).
    this.o.release();
    this.settle(() => {
      this.o.reject(new Error('generation ended without a result'));
    });
  }

  /** The text of the tokens not yet released, unless they end inside a UTF-8 character. */
  private decode(force: boolean): string {
    if (this.decoded === this.tokens.length) return '';
    const pending = this.tokens.slice(this.decoded);
    const context = this.tokens.slice(Math.max(0, this.decoded - DETOKENIZE_CONTEXT), this.decoded);
    const text = this.o.model.detokenize(pending, false, context);
    if (!force && text.endsWith('\uFFFD') && pending.length < MAX_PARTIAL_TOKENS) return '';
    this.decoded = this.tokens.length;
    return text;
  }

  private emit(piece: string): void {
    this.textOut += this.o.text.push(piece);
  }

  private finish(reason: FinishReason): false {
    this.emit(this.decode(true));
    this.textOut += this.o.text.end();
    const finishReason = this.o.text.hasStopped ? 'stop' : reason;
    this.settle(() => {
      this.flush();
      this.o.resolve({
        text: this.o.text.reply,
        completionTokens: this.completionTokens,
        finishReason,
        cachedPromptTokens: this.o.start,
      });
    });
    return false;
  }

  private settle(action: () => void): void {
    if (this.settled) return;
    this.settled = true;
    action();
  }
}
