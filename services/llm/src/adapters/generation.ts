import {
  LlamaGrammarEvaluationState,
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaModel,
  type SequenceEvaluateOptions,
  type Token,
} from 'node-llama-cpp';
import type { StopText } from '../domain/stop-text.js';
import type { FinishReason, GenerationParams, GenerationResult } from '../domain/types.js';
import type { GenerateCallbacks } from './engine.js';
import type { Stepper } from './lockstep.js';

/** Prompt tokens given to the detokenizer as the text the reply continues (spacing, merges). */
const DETOKENIZE_CONTEXT = 8;
/** Tokens held back while they decode to an incomplete UTF-8 character. */
const MAX_PARTIAL_TOKENS = 4;

export interface GenerationOptions {
  readonly model: LlamaModel;
  readonly sequence: LlamaContextSequence;
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
 * One request's generation on its sequence, stepped by the engine's `Lockstep`: sampling, stop
 * tokens and sequences, the token budget, streaming text in whole characters, abort.
 */
export class Generation implements Stepper<Token> {
  private readonly iterator: ReturnType<LlamaContextSequence['evaluate']>;
  /** The prompt's tail, then every generated token. */
  private readonly tokens: Token[];
  private readonly promptTail: number;
  /** Tokens whose text is released (the rest decode to an incomplete character so far). */
  private decoded: number;
  private settled = false;
  private readonly onAbort: () => void;

  constructor(private readonly o: GenerationOptions) {
    this.tokens = o.prompt.slice(-DETOKENIZE_CONTEXT);
    this.promptTail = this.tokens.length;
    this.decoded = this.tokens.length;
    const penalties = o.params.frequencyPenalty !== undefined || o.params.presencePenalty !== undefined;
    const options: SequenceEvaluateOptions = {
      temperature: o.params.temperature,
      ...(o.params.topP === undefined ? {} : { topP: o.params.topP }),
      ...(o.params.seed === undefined ? {} : { seed: o.params.seed }),
      ...(o.grammar === undefined
        ? {}
        : {
            grammarEvaluationState: new LlamaGrammarEvaluationState({ model: o.model, grammar: o.grammar }),
          }),
      ...(penalties
        ? {
            repeatPenalty: {
              // OpenAI's penalties count the tokens generated so far.
              punishTokens: () => this.tokens.slice(this.promptTail),
              penalty: 1,
              frequencyPenalty: o.params.frequencyPenalty ?? 0,
              presencePenalty: o.params.presencePenalty ?? 0,
            },
          }
        : {}),
    };
    this.iterator = o.sequence.evaluate(o.prompt.slice(o.start), options);
    this.onAbort = () => {
      this.settle(() => {
        o.reject(o.signal.reason);
      });
    };
    if (o.signal.aborted) this.onAbort();
    else o.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Tokens generated so far. */
  get completionTokens(): number {
    return this.tokens.length - this.promptTail;
  }

  get cancelled(): boolean {
    return this.settled;
  }

  next(): Promise<IteratorResult<Token>> {
    return this.iterator.next();
  }

  take(step: PromiseSettledResult<IteratorResult<Token>>): boolean {
    if (step.status === 'rejected') {
      this.settle(() => {
        this.o.reject(step.reason);
      });
      return false;
    }
    // The iterator ends on llama.cpp's end-of-generation tokens.
    if (step.value.done === true) return this.finish('stop');
    const token = step.value.value;
    if (this.o.tokenStops.has(token)) return this.finish('stop');
    this.tokens.push(token);
    this.o.callbacks.onTokens?.(1);
    this.emit(this.decode(false));
    if (this.o.text.hasStopped) return this.finish('stop');
    if (this.completionTokens >= this.o.params.maxTokens) return this.finish('length');
    return true;
  }

  close(): void {
    this.o.signal.removeEventListener('abort', this.onAbort);
    // The suspended iterator runs its cleanup now; the sequence is free before the request's
    // caller hears the result (so its next request finds its prefix cached here).
    void this.iterator.return();
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
    const released = this.o.text.push(piece);
    if (released !== '') this.o.callbacks.onText?.(released);
  }

  private finish(reason: FinishReason): false {
    this.emit(this.decode(true));
    const tail = this.o.text.end();
    if (tail !== '') this.o.callbacks.onText?.(tail);
    const finishReason = this.o.text.hasStopped ? 'stop' : reason;
    this.settle(() => {
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
