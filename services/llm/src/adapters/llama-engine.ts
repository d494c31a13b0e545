import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { BadRequestError, ServiceUnavailableError } from '@clinicalsuite/kit';
import {
  LlamaLogLevel,
  LlamaText,
  getLlama,
  getModuleVersion,
  isLlamaText,
  resolveChatWrapper,
  type ChatHistoryItem,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaGrammar,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import { StopText } from '../domain/stop-text.js';
import type { ChatTurn, GenerationParams, GenerationResult, OutputFormat } from '../domain/types.js';
import { uvThreadpoolSizeOf } from '../thread-pool.js';
import {
  decodesOnCpu,
  type BatchingStats,
  type ChatTemplateInfo,
  type GenerateCallbacks,
  type LlmEngine,
  type ModelDescription,
} from './engine.js';
import { Generation } from './generation.js';
import { Lockstep } from './lockstep.js';
import { nativeOf, type Native } from './native.js';
import { SequencePool } from './sequence-pool.js';

/**
 * The engine on node-llama-cpp: one model, one context whose sequences (one per concurrency slot)
 * are decoded together in shared batches, so the requests in work run at once: one `Lockstep` loop
 * steps every generation together on the native addon's calls (lockstep.ts, native.ts). A request
 * reuses the idle sequence holding the longest prefix of its prompt (sequence-pool.ts).
 */

/** Request schemas arrive checked and rewritten to the converter's subset (domain/json-schema.ts). */
type AnyJsonSchema = Parameters<Llama['createGrammarForJsonSchema']>[0];

export interface LlamaEngineOptions {
  readonly modelPath: string;
  /** Sequences: one per concurrency slot. */
  readonly sequences: number;
  readonly contextSize: number;
  /** CPU threads; llama.cpp's default oversubscribes small machines badly. */
  readonly threads: number;
  readonly gpu: 'auto' | 'cuda' | 'vulkan' | 'metal' | false;
  readonly gpuLayers: number | 'auto' | 'max';
  readonly batchSize?: number | undefined;
  /**
   * libuv's pool size, as the process started with it (default: UV_THREADPOOL_SIZE, as libuv reads
   * it). With one thread, a step's samples are queued behind its decode (lockstep.ts).
   */
  readonly uvThreadpoolSize?: number | undefined;
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
      license: metadata.general.license ?? null,
      chatTemplate: template,
      gpu: llama.gpu === false ? null : llama.gpu,
      gpuLayers: model.gpuLayers,
      layers: model.fileInsights.totalLayers,
      backendVersion: await getModuleVersion(),
    };
    const native = nativeOf(context, model, description.backendVersion);
    const poolThreads = options.uvThreadpoolSize ?? uvThreadpoolSizeOf(process.env['UV_THREADPOOL_SIZE']);
    return new LlamaEngine(llama, model, context, native, wrapper, description, poolThreads === 1);
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
  private readonly pool: SequencePool;
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();
  private readonly lockstep: Lockstep;
  /** Set once unloading starts: every request from then on gets it. */
  private unloading: ServiceUnavailableError | undefined;

  constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly native: Native,
    private readonly chatWrapper: ChatWrapper,
    readonly description: ModelDescription,
    samplesBehindDecode: boolean,
  ) {
    this.contextSize = context.contextSize;
    this.pool = new SequencePool(native.context, context.totalSequences, model.fileInsights.swaSize);
    this.lockstep = new Lockstep(native.context, {
      batchSize: context.batchSize,
      output: decodesOnCpu(description) ? 'sampling' : 'decode',
      samplesBehindDecode,
      contextSize: context.contextSize,
      onDecodeError: (sequence) => {
        this.pool.clear(sequence);
      },
    });
  }

  countPromptTokens(turns: readonly ChatTurn[]): number {
    this.throwIfUnloading();
    const { contextText } = this.chatWrapper.generateContextState({ chatHistory: history(turns) });
    return contextText.tokenize(this.model.tokenizer).length;
  }

  batching(): BatchingStats {
    return this.lockstep.stats;
  }

  contextTokensInUse(): number {
    return this.pool.tokensInUse;
  }

  async generate(
    turns: readonly ChatTurn[],
    params: GenerationParams,
    callbacks: GenerateCallbacks,
    signal: AbortSignal,
  ): Promise<GenerationResult> {
    this.throwIfUnloading();
    const grammar = await this.grammarFor(params.format);
    this.throwIfUnloading();
    const state = this.chatWrapper.generateContextState({ chatHistory: history(turns) });
    const prompt = state.contextText.tokenize(this.model.tokenizer);
    const { tokenStops, textStops } = this.stopsOf(state.stopGenerationTriggers, grammar);
    const { sequence, start } = await this.pool.acquire(prompt, signal);
    if (this.unloading !== undefined) {
      this.pool.release(sequence);
      throw this.unloading;
    }
    return new Promise<GenerationResult>((resolve, reject) => {
      let generation: Generation;
      try {
        generation = new Generation({
          model: this.model,
          native: this.native,
          sequence,
          prompt,
          start,
          release: () => {
            this.pool.release(sequence);
          },
          params,
          grammar,
          tokenStops,
          text: new StopText([...params.stop, ...textStops], grammar?.trimWhitespaceSuffix ?? false),
          callbacks,
          signal,
          resolve,
          reject,
        });
      } catch (error) {
        this.pool.release(sequence);
        throw error;
      }
      this.lockstep.add(generation, prompt.slice(start));
    });
  }

  /**
   * The chat template's and the grammar's stop triggers: one that starts with a special token
   * (`<end_of_turn>`, `<|im_end|>`, EOS) stops on that token; a plain-text one stops on its text.
   * llama.cpp's end-of-generation tokens stop generation in any case.
   */
  private stopsOf(
    triggers: readonly LlamaText[],
    grammar: LlamaGrammar | undefined,
  ): { tokenStops: ReadonlySet<Token>; textStops: string[] } {
    const tokenStops = new Set<Token>();
    const textStops: string[] = [];
    const texts: LlamaText[] = [...triggers];
    for (const trigger of grammar?.stopGenerationTriggers ?? []) {
      if (typeof trigger === 'string') texts.push(LlamaText(trigger));
      else if (isLlamaText(trigger)) texts.push(trigger);
      else if (typeof trigger[0] === 'number') tokenStops.add(trigger[0]);
      else if (trigger.every((part) => typeof part === 'string')) textStops.push(trigger.join(''));
    }
    for (const text of texts) {
      const tokens = text.tokenize(this.model.tokenizer);
      const first = tokens[0];
      if (first === undefined) continue;
      if (this.model.isSpecialToken(first)) tokenStops.add(first);
      else textStops.push(this.model.detokenize(tokens, false));
    }
    return { tokenStops, textStops };
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

  private throwIfUnloading(): void {
    if (this.unloading !== undefined) throw this.unloading;
  }

  async dispose(): Promise<void> {
    // No decode or sampling step may be in flight when the context goes. A request still in work,
    // or one that comes in meanwhile, gets a 503 (with Retry-After): another replica, or this one
    // once restarted, can serve it.
    this.unloading ??= new ServiceUnavailableError('the model is being unloaded: the service is stopping');
    await this.lockstep.stop(this.unloading);
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
