import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { MODEL_MANIFEST, defaultModelsDir, resolveModelPath } from '@clinicalsuite/kit/models';
import { z } from 'zod';
import { CODE_TYPES, CodeTypeSchema, type CodeType } from './schemas/code-record.js';

/** The code search service's configuration, parsed once at start-up. */

export const codesearchConfigSchema = kitConfigSchema({
  port: 8014,
  maxConcurrency: 16,
  queueSize: 256,
  queueTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  bodyLimit: '64kb',
}).extend({
  /** The token that callers present (scope `codesearch`); AUTH_TOKENS_FILE may add more. */
  CODE_SEARCH_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Longest query, in characters. */
  CODESEARCH_MAX_QUERY_CHARS: env.int({ min: 1, max: 10_000 }).default(500),
  /** Largest `top_k`. */
  CODESEARCH_MAX_TOP_K: env.int({ min: 1, max: 1000 }).default(100),
  /** Candidates each ranking passes to the fusion. */
  CODESEARCH_CANDIDATES: env.int({ min: 10, max: 2000 }).default(100),
  /**
   * Which of the manifest's embedders is the default model (its files, prefixes and minimum
   * similarity): `e5` (multilingual-e5-small, Vietnamese and English) or `minilm`
   * (all-MiniLM-L6-v2, English only); default `e5`. The variables below override each part. Named
   * here, its model file is used even where MODEL_PATH names another (the operator sets
   * MODEL_PATH to the default's).
   */
  CODESEARCH_EMBEDDER: z.enum(['e5', 'minilm']).optional(),
  /**
   * The least cosine similarity of query and title that counts as a semantic match; a title below it
   * is not fused in, so a query that matches nothing (`😀`, `qwerty`) gets no made-up codes. Default
   * the embedder's, measured over ICD-10-CM (README); another model needs its own.
   */
  CODESEARCH_MIN_SIMILARITY: env.number({ min: -1, max: 1 }).optional(),
  /**
   * The least cosine that counts when no title shares a word with the query (the lexical side
   * found nothing): what keeps a query that means nothing from getting codes. Default the
   * embedder's, measured over ICD-10-CM (README).
   */
  CODESEARCH_MIN_SIMILARITY_UNMATCHED: env.number({ min: -1, max: 1 }).optional(),
  /** The embedding ONNX; default MODEL_PATH (unless CODESEARCH_EMBEDDER is set), else the embedder's manifest file. */
  CODESEARCH_EMBEDDING_MODEL_PATH: z.string().optional(),
  /** Its tokenizer.json (or a .zip holding one); default the embedder's manifest tokenizer. */
  CODESEARCH_EMBEDDING_TOKENIZER_PATH: z.string().optional(),
  /** Default `query: ` / `passage: ` for E5, empty for MiniLM. */
  CODESEARCH_EMBEDDING_QUERY_PREFIX: z.string().optional(),
  CODESEARCH_EMBEDDING_PASSAGE_PREFIX: z.string().optional(),
  CODESEARCH_EMBEDDING_MAX_TOKENS: env.int({ min: 8, max: 512 }).default(128),
  /** `off` runs lexical search only, whatever is mounted. */
  CODESEARCH_EMBEDDINGS: z.enum(['auto', 'off']).default('auto'),
  /** Types whose titles are embedded (comma-separated, or `all`). PROCEDURE's 69k titles take long. */
  CODESEARCH_EMBED_TYPES: z
    .string()
    .default('ICD10,ICPC2,CPT,SERVICE')
    .transform((s, ctx) => {
      if (s.trim().toLowerCase() === 'all') return [...CODE_TYPES];
      const out: CodeType[] = [];
      for (const part of s
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '')) {
        const t = CodeTypeSchema.safeParse(part);
        if (!t.success) {
          ctx.addIssue({ code: 'custom', message: `unknown code type ${part} (${CODE_TYPES.join(', ')})` });
          return z.NEVER;
        }
        out.push(t.data);
      }
      return out;
    }),
  CODESEARCH_EMBED_BATCH: env.int({ min: 1, max: 512 }).default(32),
  /**
   * onnxruntime threads for query embeddings, and worker threads (one single-threaded session each)
   * for the title vectors; default the cores this process may use, at most 4.
   */
  CODESEARCH_THREADS: env.int({ min: 1, max: 64 }).optional(),
  /** Import the fetched ICD-10-CM / ICD-10-PCS files from MODELS_DIR into the store at start. */
  CODESEARCH_BUILTIN_SETS: env.bool().default(true),
  /** The curated Vietnamese terms file; default the one shipped with the service. */
  CODESEARCH_VI_TERMS_PATH: z.string().optional(),
  /** The abbreviation table; default the one shipped with the service. */
  CODESEARCH_ABBREVIATIONS_PATH: z.string().optional(),
  /** How often the store is checked for imports made while running (0: never). */
  CODESEARCH_RELOAD_POLL_MS: env.ms({ min: 0 }).default(5000),
  MODEL_POLL_MS: env.ms({ min: 10 }).default(2000),
});

/** The manifest's embedders: their files and the defaults that go with them (README, "Embedding model"). */
export const EMBEDDERS = {
  e5: {
    model: 'codesearch-e5',
    tokenizer: 'codesearch-e5-tokenizer',
    queryPrefix: 'query: ',
    passagePrefix: 'passage: ',
    minSimilarity: -1,
    minSimilarityUnmatched: 0.88,
  },
  minilm: {
    model: 'codesearch-embedder',
    tokenizer: 'codesearch-embedder-tokenizer',
    queryPrefix: '',
    passagePrefix: '',
    minSimilarity: 0.5,
    minSimilarityUnmatched: 0.5,
  },
} as const;

export type CodesearchConfig = Omit<
  z.output<typeof codesearchConfigSchema>,
  | 'CODESEARCH_MIN_SIMILARITY'
  | 'CODESEARCH_MIN_SIMILARITY_UNMATCHED'
  | 'CODESEARCH_EMBEDDING_QUERY_PREFIX'
  | 'CODESEARCH_EMBEDDING_PASSAGE_PREFIX'
> & {
  readonly CODESEARCH_MIN_SIMILARITY: number;
  readonly CODESEARCH_MIN_SIMILARITY_UNMATCHED: number;
  readonly CODESEARCH_EMBEDDING_QUERY_PREFIX: string;
  readonly CODESEARCH_EMBEDDING_PASSAGE_PREFIX: string;
  /** The manifest ids of the default model files (what to fetch when they are missing). */
  readonly embedderIds: { readonly model: string; readonly tokenizer: string };
  readonly dataDir: string;
  readonly modelsDir: string;
  readonly embeddingModelPath: string;
  readonly embeddingTokenizerPath: string;
  readonly viTermsPath: string;
  readonly abbreviationsPath: string;
  readonly threads: number;
  /** Manifest files imported as built-in sets when present. */
  readonly builtinSets: readonly BuiltinSet[];
};

export interface BuiltinSet {
  readonly id: string;
  readonly type: CodeType;
  readonly path: string;
  readonly format: 'icd10cm-xml' | 'icd10pcs-sqlite';
  readonly license: string;
}

type Env = Readonly<Record<string, string | undefined>>;

const DATA = (name: string): string => fileURLToPath(new URL(`../data/${name}`, import.meta.url));

export function loadCodesearchConfig(source: Env = process.env): CodesearchConfig {
  const config = loadConfig(codesearchConfigSchema, source);
  const modelsDir = config.MODELS_DIR ?? defaultModelsDir(source);
  const manifestPath = (id: string): string => {
    const entry = MODEL_MANIFEST[id];
    if (entry === undefined) throw new Error(`the model manifest lacks "${id}"`);
    return resolveModelPath(modelsDir, entry);
  };
  const builtin = (id: string, type: CodeType, format: BuiltinSet['format']): BuiltinSet[] => {
    const entry = MODEL_MANIFEST[id];
    return entry === undefined ? [] : [{ id, type, format, path: manifestPath(id), license: entry.license }];
  };
  const embedder = EMBEDDERS[config.CODESEARCH_EMBEDDER ?? 'e5'];
  const modelPath =
    config.CODESEARCH_EMBEDDER === undefined ? config.MODEL_PATH : manifestPath(embedder.model);
  return {
    ...config,
    CODESEARCH_MIN_SIMILARITY: config.CODESEARCH_MIN_SIMILARITY ?? embedder.minSimilarity,
    CODESEARCH_MIN_SIMILARITY_UNMATCHED:
      config.CODESEARCH_MIN_SIMILARITY_UNMATCHED ?? embedder.minSimilarityUnmatched,
    CODESEARCH_EMBEDDING_QUERY_PREFIX: config.CODESEARCH_EMBEDDING_QUERY_PREFIX ?? embedder.queryPrefix,
    CODESEARCH_EMBEDDING_PASSAGE_PREFIX: config.CODESEARCH_EMBEDDING_PASSAGE_PREFIX ?? embedder.passagePrefix,
    embedderIds: { model: embedder.model, tokenizer: embedder.tokenizer },
    dataDir: config.DATA_DIR ?? 'data',
    modelsDir,
    embeddingModelPath: config.CODESEARCH_EMBEDDING_MODEL_PATH ?? modelPath ?? manifestPath(embedder.model),
    embeddingTokenizerPath: config.CODESEARCH_EMBEDDING_TOKENIZER_PATH ?? manifestPath(embedder.tokenizer),
    viTermsPath: config.CODESEARCH_VI_TERMS_PATH ?? DATA('vi-terms.csv'),
    abbreviationsPath: config.CODESEARCH_ABBREVIATIONS_PATH ?? DATA('abbreviations.csv'),
    threads: config.CODESEARCH_THREADS ?? Math.min(4, availableParallelism()),
    builtinSets: config.CODESEARCH_BUILTIN_SETS
      ? [
          ...builtin('codesearch-icd10cm', 'ICD10', 'icd10cm-xml'),
          ...builtin('codesearch-icd10pcs', 'PROCEDURE', 'icd10pcs-sqlite'),
        ]
      : [],
  };
}
