import type { ChatTurn, GenerationParams, GenerationResult } from '../domain/types.js';

/** What the routes need from a loaded model; node-llama-cpp implements it in llama-engine.ts. */

export interface ChatTemplateInfo {
  /** `gguf`: the model's own template; `fallback`: the GGUF has none and a built-in format is used. */
  readonly source: 'gguf' | 'fallback';
  /** The prompt format in use (node-llama-cpp's wrapper name, e.g. `ChatML`, `Gemma`, `Jinja`). */
  readonly wrapper: string;
  readonly note: string | null;
}

export interface ModelDescription {
  readonly path: string;
  readonly sizeBytes: number | null;
  readonly architecture: string | null;
  readonly name: string | null;
  /** The GGUF's own `general.license`, when it states one. */
  readonly license: string | null;
  readonly chatTemplate: ChatTemplateInfo;
  /** `cuda`, `vulkan`, `metal`, or null on CPU. */
  readonly gpu: string | null;
  readonly gpuLayers: number;
  /** The model's layers: with fewer on the GPU, every decode runs on the CPU's threads too. */
  readonly layers: number;
  readonly backendVersion: string;
}

/** Whether a decode keeps llama.cpp's CPU threads busy (some layers, or all, are on the CPU). */
export const decodesOnCpu = (model: ModelDescription): boolean =>
  model.gpu === null || model.gpuLayers < model.layers;

export interface BatchingStats {
  readonly steps: number;
  readonly sequences: number;
}

export interface GenerateCallbacks {
  /** Text as it is produced (whole UTF-8 characters; stop sequences held back and cut). */
  readonly onText?: (text: string) => void;
  /** Called as tokens are generated, with how many. */
  readonly onTokens?: (count: number) => void;
}

export interface LlmEngine {
  /** Tokens per sequence: prompt plus completion must fit. */
  readonly contextSize: number;
  readonly description: ModelDescription;
  /** Tokens of the prompt the chat template makes of `turns` (what `usage.prompt_tokens` reports). */
  countPromptTokens(turns: readonly ChatTurn[]): number;
  /**
   * Generates the assistant's reply on a free sequence. Rejects with the signal's reason when
   * `signal` aborts; the sequence is free again as soon as generation stops.
   */
  generate(
    turns: readonly ChatTurn[],
    params: GenerationParams,
    callbacks: GenerateCallbacks,
    signal: AbortSignal,
  ): Promise<GenerationResult>;
  /** Tokens held in the KV cache over all sequences. */
  contextTokensInUse(): number;
  /** Decode steps since load, and the sequences they decoded (their ratio is the mean batch size). */
  batching(): BatchingStats;
  /** Free the sequences' and the model's memory. */
  dispose(): Promise<void>;
}
