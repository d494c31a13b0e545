import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BadRequestError } from '@clinicalsuite/kit';
import {
  LlamaChat,
  LlamaLogLevel,
  getLlama,
  getModuleVersion,
  resolveChatWrapper,
  type ChatHistoryItem,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaModel,
} from 'node-llama-cpp';
import type { ChatTurn, GenerationParams, GenerationResult, OutputFormat } from '../domain/types.js';
import type { ChatTemplateInfo, GenerateCallbacks, LlmEngine, ModelDescription } from './engine.js';

/**
 * The engine on node-llama-cpp: one model, one context whose sequences (one per concurrency slot,
 * plus spares) are decoded together in shared batches, so the requests in work run at once. Each
 * request takes a fresh sequence (see `acquireSequence`), so no prompt prefix is reused.
 */

/** Request schemas are checked by llama.cpp's grammar converter, not by TypeScript. */
type AnyJsonSchema = Parameters<Llama['createGrammarForJsonSchema']>[0];

export interface LlamaEngineOptions {
  readonly modelPath: string;
  /** Sequences: one per concurrency slot, plus spares (see `acquireSequence`). */
  readonly sequences: number;
  readonly contextSize: number;
  /** CPU threads; llama.cpp's default oversubscribes small machines badly. */
  readonly threads: number;
  readonly gpu: 'auto' | 'cuda' | 'vulkan' | 'metal' | false;
  readonly gpuLayers: number | 'auto' | 'max';
  readonly batchSize?: number | undefined;
  /** llama.cpp's own log lines. */
  readonly log?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
}

export async function loadLlamaEngine(options: LlamaEngineOptions): Promise<LlmEngine> {
  const llama = await getLlama({
    gpu: options.gpu,
    maxThreads: options.threads,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => options.log?.(logLevelOf(level), message.trim()),
  });
  let model: LlamaModel | undefined;
  try {
    model = await llama.loadModel({ modelPath: options.modelPath, gpuLayers: options.gpuLayers });
    const context = await model.createContext({
      contextSize: options.contextSize,
      sequences: options.sequences,
      threads: options.threads,
      ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    });
    const { wrapper, template } = chatWrapperOf(model);
    const size = await stat(options.modelPath).then(
      (s) => s.size,
      () => null,
    );
    const metadata = model.fileInfo.metadata;
    const description: ModelDescription = {
      path: options.modelPath,
      sizeBytes: size,
      architecture: metadata.general.architecture,
      name: metadata.general.name ?? null,
      chatTemplate: template,
      gpu: llama.gpu === false ? null : llama.gpu,
      gpuLayers: model.gpuLayers,
      backendVersion: await getModuleVersion(),
    };
    return new LlamaEngine(llama, model, context, wrapper, description);
  } catch (error) {
    await model?.dispose();
    await llama.dispose();
    throw error;
  }
}

function logLevelOf(level: LlamaLogLevel): 'debug' | 'info' | 'warn' | 'error' {
  switch (level) {
    case LlamaLogLevel.fatal:
    case LlamaLogLevel.error:
      return 'error';
    case LlamaLogLevel.warn:
      return 'warn';
    case LlamaLogLevel.info:
      return 'info';
    default:
      return 'debug';
  }
}

/** The model's own template when the GGUF has one; otherwise node-llama-cpp's pick, said so. */
function chatWrapperOf(model: LlamaModel): { wrapper: ChatWrapper; template: ChatTemplateInfo } {
  const wrapper = resolveChatWrapper(model);
  const hasTemplate = typeof model.fileInfo.metadata.tokenizer.chat_template === 'string';
  return {
    wrapper,
    template: hasTemplate
      ? { source: 'gguf', wrapper: wrapper.wrapperName, note: null }
      : {
          source: 'fallback',
          wrapper: wrapper.wrapperName,
          note:
            `${basename(model.filename ?? 'the model')} has no chat template (tokenizer.chat_template): ` +
            `probably a base model, not instruction-tuned. Prompts use the ${wrapper.wrapperName} format ` +
            'chosen from its architecture and name; replies will not follow instructions well. ' +
            'Mount an instruction-tuned GGUF (`npm run models -- fetch llm`).',
        },
  };
}

class LlamaEngine implements LlmEngine {
  readonly contextSize: number;
  private readonly live = new Set<LlamaContextSequence>();
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();

  constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    readonly description: ModelDescription,
  ) {
    this.contextSize = context.contextSize;
  }

  /**
   * A fresh sequence for every request. Reusing one would save re-evaluating a shared prefix, but
   * node-llama-cpp 3.22 erases a reused sequence's old tokens under the context lock that its batch
   * loop holds for as long as any other sequence is generating: a request on a reused sequence
   * waited for every other generation to finish. A fresh sequence needs no erase; a finished one
   * is disposed and its id comes back when the loop next idles. The context holds spare sequences
   * (SPARE_SEQUENCES) so fresh ids exist while finished ones wait to be reclaimed.
   */
  private async acquireSequence(signal: AbortSignal): Promise<LlamaContextSequence> {
    for (;;) {
      if (signal.aborted) throw signal.reason as Error;
      if (this.context.sequencesLeft > 0) {
        const sequence = this.context.getSequence();
        this.live.add(sequence);
        sequence.onDispose.createListener(() => this.live.delete(sequence));
        return sequence;
      }
      await sleep(2);
    }
  }

  countPromptTokens(turns: readonly ChatTurn[]): number {
    const { contextText } = this.chatWrapper.generateContextState({ chatHistory: history(turns) });
    return contextText.tokenize(this.model.tokenizer).length;
  }

  contextTokensInUse(): number {
    let sum = 0;
    for (const s of this.live) if (!s.disposed) sum += s.nextTokenIndex;
    return sum;
  }

  async generate(
    turns: readonly ChatTurn[],
    params: GenerationParams,
    callbacks: GenerateCallbacks,
    signal: AbortSignal,
  ): Promise<GenerationResult> {
    const grammar = await this.grammarFor(params.format);
    const sequence = await this.acquireSequence(signal);
    const chat = new LlamaChat({
      contextSequence: sequence,
      chatWrapper: this.chatWrapper,
      autoDisposeSequence: false,
    });
    let completionTokens = 0;
    try {
      const penalties = params.frequencyPenalty !== undefined || params.presencePenalty !== undefined;
      const result = await chat.generateResponse(history(turns), {
        maxTokens: params.maxTokens,
        temperature: params.temperature,
        ...(params.topP === undefined ? {} : { topP: params.topP }),
        ...(params.seed === undefined ? {} : { seed: params.seed }),
        ...(grammar === undefined ? {} : { grammar }),
        ...(params.stop.length === 0 ? {} : { customStopTriggers: params.stop }),
        repeatPenalty: penalties
          ? {
              penalty: 1,
              frequencyPenalty: params.frequencyPenalty ?? 0,
              presencePenalty: params.presencePenalty ?? 0,
            }
          : false,
        signal,
        stopOnAbortSignal: false,
        ...(callbacks.onText === undefined ? {} : { onTextChunk: callbacks.onText }),
        onToken: (tokens) => {
          completionTokens += tokens.length;
          callbacks.onTokens?.(tokens.length);
        },
      });
      return {
        text: result.response,
        completionTokens,
        finishReason: result.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
      };
    } catch (error) {
      if (signal.aborted) throw signal.reason as Error;
      throw error;
    } finally {
      chat.dispose();
      // Its cells are freed when the context's batch loop next lets go of its lock.
      void sequence.dispose();
    }
  }

  private grammarFor(format: OutputFormat): Promise<LlamaGrammar> | undefined {
    if (format.type === 'text') return undefined;
    const key = format.schema === 'any' ? 'any' : JSON.stringify(format.schema);
    let grammar = this.grammars.get(key);
    if (grammar === undefined) {
      grammar =
        format.schema === 'any'
          ? this.llama.getGrammarFor('json')
          : this.llama.createGrammarForJsonSchema(format.schema as AnyJsonSchema).catch((error: unknown) => {
              this.grammars.delete(key);
              throw new BadRequestError(
                `response_format.json_schema.schema is not supported: ${error instanceof Error ? error.message : String(error)}`,
                { param: 'response_format', code: 'invalid_json_schema' },
              );
            });
      if (this.grammars.size >= 64) this.grammars.clear();
      this.grammars.set(key, grammar);
    }
    return grammar;
  }

  async dispose(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}

/** Turns to node-llama-cpp's history, ending with the empty model reply to generate. */
function history(turns: readonly ChatTurn[]): ChatHistoryItem[] {
  const items: ChatHistoryItem[] = turns.map((turn): ChatHistoryItem => {
    switch (turn.role) {
      case 'system':
        return { type: 'system', text: turn.text };
      case 'user':
        return { type: 'user', text: turn.text };
      case 'assistant':
        return { type: 'model', response: [turn.text] };
    }
  });
  items.push({ type: 'model', response: [] });
  return items;
}
