import { performance } from 'node:perf_hooks';
import { BadRequestError, ValidationError, multipart, uploadedFiles } from '@clinicalsuite/kit';
import type { SubserviceClients } from '../adapters/subservices/index.js';
import {
  codeQueries,
  documentBudgetBytes,
  documentMessages,
  mergeCandidates,
  type CodeHit,
  type DocumentTask,
  type QueryHits,
} from '../domain/pipelines.js';
import type { SubserviceId, Upload } from '../domain/subservices.js';
import type { ChatMessage, ConcreteIntent, Language, LlmResult, UpstreamId } from '../domain/types.js';
import type { AgentCodeType, Step } from '../schemas/subservices.js';
import type { AgentRuntime } from './runtime.js';

/**
 * What the sub-service endpoints (routes/subservices.ts) and the pipelines (routes/pipelines.ts)
 * share: the documented errors, reading an upload, timing steps, an LLM call on a document, and
 * the code search over a document's lines.
 */

/** The errors every sub-service endpoint documents. */
export const SUBSERVICE_RESPONSES = {
  413: { description: 'The upload is over AGENT_UPLOAD_MAX_BYTES, or the sub-service found it too large' },
  415: {
    description: 'Not multipart, or the sub-service refused the file type (its message, prefixed by its id)',
  },
  422: {
    description: 'A field is invalid (the sub-service’s own 422 keeps its field list, messages prefixed)',
  },
  502: {
    description:
      'The sub-service is unreachable, failed or timed out (AGENT_SUBSERVICE_TIMEOUT_MS), or every LLM ' +
      'failed or timed out (the message names which)',
  },
  503: {
    description: 'The sub-service is not configured (names its `<NAME>_URL`) or not ready (its reason)',
  },
  504: { description: "The request passed the agent's own deadline (REQUEST_TIMEOUT_MS)" },
} as const;

/** The kit's multipart parser for `fields`, with the agent's upload limit (413 past it). */
export function uploadParser(rt: AgentRuntime, fields: readonly string[] = ['file']) {
  return multipart({
    files: fields.map((name) => ({ name, maxCount: 1 })),
    maxFileBytes: rt.config.AGENT_UPLOAD_MAX_BYTES,
  });
}

/** The one file sent in any of `fields` (422 when none, 400 when several or empty). */
export function requireUpload(
  req: Parameters<typeof uploadedFiles>[0],
  fields: readonly string[],
  what: string,
): Upload {
  const files = fields.flatMap((field) => uploadedFiles(req, field).map((file) => ({ field, file })));
  const first = files[0];
  if (first?.file.buffer === undefined) {
    throw new ValidationError([
      {
        loc: ['body', fields[0] ?? 'file'],
        msg: `${what} is required as the multipart file part ${fields.map((f) => `\`${f}\``).join(' or ')}`,
        type: 'missing',
      },
    ]);
  }
  if (files.length > 1) {
    throw new BadRequestError(`Send one file, in ${fields.map((f) => `\`${f}\``).join(' or ')}`, {
      code: 'too_many_files',
      param: first.field,
    });
  }
  if (first.file.size === 0) {
    throw new BadRequestError(`The uploaded file is empty (${what} expected)`, {
      code: 'empty_file',
      param: first.field,
    });
  }
  return { buffer: first.file.buffer, filename: first.file.originalname, mimetype: first.file.mimetype };
}

/** Runs and times the steps of one request; pipelines also observe `agent_pipeline_step_duration_seconds`. */
export class StepTimer {
  readonly steps: Step[] = [];

  constructor(
    private readonly rt: AgentRuntime,
    /** The pipeline's name, or null outside pipelines (no step metric). */
    private readonly pipeline: string | null,
  ) {}

  async run<T>(
    name: string,
    where: {
      subservice?: SubserviceId;
      model?: (value: T) => UpstreamId | null;
      detail?: (value: T) => string | null;
    },
    work: () => Promise<T>,
  ): Promise<T> {
    const started = performance.now();
    const value = await work();
    const ms = performance.now() - started;
    if (this.pipeline !== null)
      this.rt.metrics.pipelineSteps.observe({ pipeline: this.pipeline, step: name }, ms / 1000);
    this.steps.push({
      name,
      ms: round(ms),
      subservice: where.subservice ?? null,
      model: where.model?.(value) ?? null,
      skipped: false,
      detail: where.detail?.(value) ?? null,
    });
    return value;
  }

  skip(name: string, detail: string, subservice: SubserviceId | null = null): void {
    this.steps.push({ name, ms: 0, subservice, model: null, skipped: true, detail });
  }

  /** Milliseconds spent in steps. */
  get total(): number {
    return this.steps.reduce((sum, s) => sum + s.ms, 0);
  }
}

/** The request's end: `processing_time_ms`, and the agent's own share of it in `agent_overhead_seconds`. */
export function finishTiming(rt: AgentRuntime, admittedAt: number, timer: StepTimer): number {
  const total = performance.now() - admittedAt;
  rt.metrics.overhead.observe(Math.max(0, total - timer.total) / 1000);
  return round(total);
}

/** One LLM call through the router, with the agent's token and temperature settings. */
export function complete(
  rt: AgentRuntime,
  messages: readonly ChatMessage[],
  intent: ConcreteIntent,
  signal: AbortSignal,
  jsonSchema?: { name: string; schema: Record<string, unknown> },
): Promise<LlmResult> {
  return rt.router.complete(
    {
      messages,
      intent,
      maxTokens: rt.config.AGENT_MAX_TOKENS,
      temperature: rt.config.AGENT_TEMPERATURE,
      ...(jsonSchema === undefined ? {} : { jsonSchema }),
    },
    signal,
  );
}

/** UTF-8 bytes of document a prompt may carry with the agent's context and reply settings. */
export function documentBudget(rt: AgentRuntime): number {
  return documentBudgetBytes(rt.config.AGENT_CONTEXT_TOKENS, rt.config.AGENT_MAX_TOKENS);
}

export interface DocumentAnalysis {
  readonly text: string;
  readonly model: UpstreamId;
  readonly truncated: boolean;
}

/** `task` on `text` as a timed step: the LLM's text, the upstream that answered, whether the text was cut. */
export async function analyseDocument(
  rt: AgentRuntime,
  timer: StepTimer,
  step: string,
  task: DocumentTask,
  text: string,
  language: Language,
  intent: ConcreteIntent,
  signal: AbortSignal,
): Promise<DocumentAnalysis> {
  const prompt = documentMessages(task, text, language, documentBudget(rt));
  const result = await timer.run(
    step,
    {
      model: (r) => r.model,
      detail: () => (prompt.truncated ? 'the text was cut to fit the model’s context' : null),
    },
    () => complete(rt, prompt.messages, intent, signal),
  );
  return { text: result.text.trim(), model: result.model, truncated: prompt.truncated };
}

/** Code types looked up for documents (OCR text): the diagnosis code systems. */
export const DOCUMENT_CODE_TYPES: readonly AgentCodeType[] = ['ICD10', 'ICPC2'];
/** Queries made from one document, their length, and results kept per query. */
const MAX_QUERIES = 24;
const MAX_QUERY_CHARS = 200;
const RESULTS_PER_QUERY = 3;
const MAX_CANDIDATES = 30;
/** Searches in flight at once for one document. */
const SEARCH_PARALLEL = 4;

export interface DocumentCodes {
  readonly code_types: string[];
  readonly missing_types: string[];
  readonly warnings: string[];
  readonly mode: string | null;
  readonly queries: { query: string; results: CodeHit[] }[];
  readonly candidates: ReturnType<typeof mergeCandidates>;
}

/**
 * The code search over a document: every line and clause (codeQueries) is one query, and the
 * distinct codes found become the candidates. Nothing here invents a code: every candidate is one
 * the code search answered.
 */
export async function documentCodes(
  subs: SubserviceClients,
  text: string,
  types: readonly AgentCodeType[],
  signal: AbortSignal,
): Promise<DocumentCodes> {
  // Asking for codes without a code search is the 503 naming CODE_SEARCH_URL, even for a blank text.
  subs.endpoints.codesearch.ensureConfigured();
  const queries = codeQueries(text, MAX_QUERIES, MAX_QUERY_CHARS);
  const answers = new Array<Awaited<ReturnType<SubserviceClients['search']>>>(queries.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < queries.length) {
      const i = next++;
      answers[i] = await subs.search(
        { query: queries[i] ?? '', code_types: types, top_k: RESULTS_PER_QUERY, hybrid: true },
        signal,
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEARCH_PARALLEL, queries.length) }, worker));
  const hits: QueryHits[] = queries.map((query, i) => ({
    query,
    results: (answers[i]?.results ?? []).map((r) => ({
      code: r.code,
      type: r.type,
      title: r.title,
      title_vi: r.title_vi,
      title_en: r.title_en,
      score: r.score,
    })),
  }));
  const first = answers[0];
  return {
    code_types: first?.code_types ?? [],
    missing_types: first?.missing_types ?? [],
    warnings: [...new Set(answers.flatMap((a) => a.warnings))],
    mode: first?.mode ?? null,
    queries: hits.map((h) => ({ query: h.query, results: [...h.results] })),
    candidates: mergeCandidates(hits, MAX_CANDIDATES),
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
