import { z } from 'zod';
import { CODE_TYPES, CodeTypeSchema } from './code-record.js';

/** Request and response bodies of the code search service. */

export function searchRequestSchema(limits: { maxQueryChars: number; maxTopK: number }) {
  return z.strictObject({
    query: z
      .string()
      .trim()
      .min(1, 'query must not be empty')
      .max(limits.maxQueryChars, `query must be at most ${limits.maxQueryChars} characters`)
      .describe(
        'Free text, Vietnamese or English, with or without diacritics; abbreviations (THA, HTN) and codes work',
      ),
    code_types: z
      .array(CodeTypeSchema)
      .min(1, 'code_types must name at least one type, or be null for all')
      .nullable()
      .default(null)
      .describe(`Types to search (${CODE_TYPES.join(', ')}); null: all`),
    top_k: z.number().int().min(1).max(limits.maxTopK).default(10).describe('Results to return'),
    hybrid: z
      .boolean()
      .default(true)
      .describe('Fuse lexical ranks with embedding similarity when an embedding model is loaded'),
  });
}

const SpanSchema = z.object({
  start: z.number().int().describe('UTF-16 offset in `text`'),
  end: z.number().int(),
  text: z.string().describe('The matched part of `text`'),
  query_term: z.string().describe('The query word it matched, as written'),
  via: z.enum(['exact', 'prefix', 'abbreviation', 'code']).describe('How it matched'),
});

const HighlightSchema = z.object({
  field: z.enum(['code', 'title_en', 'title_vi', 'synonym']),
  text: z.string(),
  spans: z.array(SpanSchema),
});

const CodeRefSchema = z.object({ code: z.string(), title: z.string() });

export const SearchResultSchema = z.object({
  code: z.string(),
  type: CodeTypeSchema,
  title: z.string().describe('title_en where the set has one, else title_vi'),
  title_vi: z.string().nullable(),
  title_en: z.string().nullable(),
  title_vi_source: z
    .enum(['import', 'curated'])
    .nullable()
    .describe('`curated`: ClinicalSuite’s own translation, not an official title'),
  score: z.number().describe('BM25 (lexical mode) or reciprocal-rank fusion score (hybrid mode)'),
  ranks: z.object({
    lexical: z.number().int().nullable(),
    semantic: z.number().int().nullable(),
  }),
  similarity: z.number().nullable().describe('Cosine similarity of the query and title embeddings'),
  parent: CodeRefSchema.nullable(),
  highlights: z.array(HighlightSchema),
});

export const SearchResponseSchema = z.object({
  query: z.string(),
  mode: z.enum(['hybrid', 'lexical']),
  mode_reason: z.string().nullable().describe('Why the search ran lexical only, or only partly hybrid'),
  code_types: z.array(CodeTypeSchema).describe('Types searched'),
  missing_types: z.array(CodeTypeSchema).describe('Requested types with no codes loaded'),
  warnings: z.array(z.string()),
  expansions: z.array(z.object({ abbreviation: z.string(), expansions: z.array(z.string()) })),
  results: z.array(SearchResultSchema),
  took_ms: z.number(),
});

export type SearchResponse = z.infer<typeof SearchResponseSchema>;
export type SearchResult = z.infer<typeof SearchResultSchema>;

export const VectorStatusSchema = z.object({
  state: z.enum(['off', 'waiting', 'building', 'ready', 'failed']),
  done: z.number().int().nullable(),
  total: z.number().int().nullable(),
  reason: z.string().nullable(),
  source: z
    .enum(['cache', 'embedded'])
    .nullable()
    .describe('Where ready vectors came from: the vector cache in DATA_DIR, or embedded at this start'),
});

export const CodeTypesResponseSchema = z.object({
  types: z.array(
    z.object({
      type: CodeTypeSchema,
      count: z.number().int(),
      source: z.string(),
      format: z.string(),
      license: z.string().nullable(),
      sha256: z.string(),
      imported_at: z.string(),
      curated_vi_titles: z.number().int().describe('Codes whose Vietnamese title is our curated one'),
      vectors: VectorStatusSchema,
    }),
  ),
  missing_types: z.array(CodeTypeSchema),
  damaged_types: z
    .array(
      z.object({
        type: CodeTypeSchema,
        file: z.string(),
        problem: z.string().describe('Why the stored file cannot be read'),
        hint: z.string().describe('What to do'),
      }),
    )
    .describe(
      'Types whose stored set file cannot be read: not served, never replaced, also in missing_types',
    ),
  abbreviations: z.number().int(),
  embedding_model: z.object({
    loaded: z.boolean(),
    id: z.string().nullable(),
    reason: z.string().nullable(),
  }),
});

export const CodeDetailSchema = z.object({
  code: z.string(),
  type: CodeTypeSchema,
  title: z.string(),
  title_vi: z.string().nullable(),
  title_en: z.string().nullable(),
  title_vi_source: z.enum(['import', 'curated']).nullable(),
  synonyms: z.array(z.string()),
  parent: CodeRefSchema.nullable(),
  ancestors: z.array(CodeRefSchema).describe('Root first'),
  children: z.array(CodeRefSchema).describe('At most 200'),
  children_count: z.number().int(),
  source: z.string(),
});

export const CodeParamsSchema = z.object({ type: CodeTypeSchema, code: z.string().min(1).max(64) });

export const RootResponseSchema = z.object({
  service: z.string(),
  version: z.string(),
  port: z.number().int(),
  status: z.enum(['ready', 'starting']),
  docs: z.string(),
  endpoints: z.record(z.string(), z.string()),
});

export const HealthResponseSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  reason: z.string().optional(),
  codes: z.number().int(),
  types: z.array(CodeTypeSchema),
  mode: z.enum(['hybrid', 'lexical']).describe('What a hybrid search would run now'),
  damaged_types: z
    .array(CodeTypeSchema)
    .describe('Types whose stored set file cannot be read (not served; GET /code_types says what to do)'),
});

export const StatusResponseSchema = z.object({
  service: z.string(),
  version: z.string(),
  ready: z.boolean(),
  reason: z.string().nullable(),
  uptime_seconds: z.number(),
  codes: z.number().int(),
  terms: z.number().int(),
  types: z.record(z.string(), z.number().int()),
  embedding_model: z.string().nullable(),
  active_requests: z.number().int(),
  queued_requests: z.number().int(),
  concurrency_limit: z.number().int(),
});
