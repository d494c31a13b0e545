import type { LlamaContext, LlamaGrammarEvaluationState, LlamaModel, Token } from 'node-llama-cpp';

/**
 * The part of node-llama-cpp's native addon the engine drives directly: one llama.cpp context's
 * batch, decode and sampling calls, and its per-sequence KV cache. node-llama-cpp's own per-token
 * path (`LlamaContextSequence.evaluate()`: its locks, its decode queue dispatched on a later
 * event-loop turn, a generator per sequence) cost the service time on every token against
 * llama-server; the engine keeps node-llama-cpp for everything else (loading,
 * tokenizer, chat templates, grammars) and steps the decode loop itself, as llama-server does.
 *
 * These calls are internal to node-llama-cpp, so its version is pinned exactly
 * (services/llm/package.json) and `nativeOf` checks every one of them when the model loads: an
 * upgrade that changes them fails there with this message, not in the middle of a request.
 */

/** Tested with this node-llama-cpp version; services/llm/package.json pins it. */
export const NATIVE_TESTED_VERSION = '3.22.1';

export interface NativeContext {
  initBatch(size: number): void;
  /** Adds tokens of one sequence at `firstPosition`; returns the batch indexes of `logitIndexes`. */
  addToBatch(
    sequenceId: number,
    firstPosition: number,
    tokens: Uint32Array,
    logitIndexes: Uint32Array,
  ): Uint32Array;
  decodeBatch(): Promise<void>;
  /** Samples from the logits at a batch index; the sampler accepts the token (grammar, penalties). */
  sampleToken(batchLogitIndex: number, sampler: NativeSampler): Promise<number>;
  /** Empties a sequence's KV cache. */
  disposeSequence(sequenceId: number): void;
  /** Removes positions [start, end) of a sequence from the KV cache; false when it cannot. */
  removeTokenCellsFromSequence(sequenceId: number, start: number, end: number): boolean;
  /** The lowest position a sequence still holds (a sliding-window cache drops old ones); -1 if none. */
  getSequenceKvCacheMinPosition(sequenceId: number): number;
}

export interface NativeSampler {
  applyConfig(config: SamplerConfig): void;
  dispose(): void;
}

/** What node-llama-cpp's `_resolveSamplerConfig` hands the addon's sampler (the fields used here). */
export interface SamplerConfig {
  readonly temperature: number;
  readonly minP: number;
  readonly topK: number;
  readonly topP: number;
  readonly seed: number;
  readonly repeatPenalty?: number;
  readonly repeatPenaltyMaxTokens?: number;
  readonly repeatPenaltyTokens?: Uint32Array;
  readonly repeatPenaltyPresencePenalty?: number;
  readonly repeatPenaltyFrequencyPenalty?: number;
  readonly grammarEvaluationState?: unknown;
}

export interface Native {
  readonly context: NativeContext;
  createSampler(): NativeSampler;
  /** The addon's handle of a grammar evaluation state, for `SamplerConfig.grammarEvaluationState`. */
  grammarStateOf(state: LlamaGrammarEvaluationState): unknown;
}

const CONTEXT_METHODS = [
  'initBatch',
  'addToBatch',
  'decodeBatch',
  'sampleToken',
  'disposeSequence',
  'removeTokenCellsFromSequence',
  'getSequenceKvCacheMinPosition',
] as const;

interface Internals {
  readonly _ctx?: Record<string, unknown>;
}
interface ModelInternals {
  readonly _model?: unknown;
  readonly _llama?: {
    readonly _bindings?: { readonly AddonSampler?: new (model: unknown) => NativeSampler };
  };
}

/** The addon behind a context, or an error naming what is missing and the version tested. */
export function nativeOf(context: LlamaContext, model: LlamaModel, version: string): Native {
  const ctx = (context as unknown as Internals)._ctx;
  const internals = model as unknown as ModelInternals;
  const Sampler = internals._llama?._bindings?.AddonSampler;
  const missing = [
    ...CONTEXT_METHODS.filter((name) => typeof ctx?.[name] !== 'function').map((name) => `context.${name}`),
    ...(typeof Sampler === 'function' ? [] : ['AddonSampler']),
    ...(internals._model === undefined ? ['model handle'] : []),
  ];
  if (missing.length > 0 || Sampler === undefined) {
    throw new Error(
      `node-llama-cpp ${version} lacks the native calls the llm engine drives (${missing.join(', ')}); ` +
        `it is tested with node-llama-cpp ${NATIVE_TESTED_VERSION}, which services/llm/package.json pins`,
    );
  }
  const handle = internals._model;
  return {
    context: ctx as unknown as NativeContext,
    createSampler: () => new Sampler(handle),
    grammarStateOf: (state) => (state as unknown as { readonly _state: unknown })._state,
  };
}

/** Tokens as the addon takes them. */
export const tokenArray = (tokens: readonly Token[]): Uint32Array => Uint32Array.from(tokens);
