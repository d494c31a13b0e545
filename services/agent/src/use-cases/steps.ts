import { performance } from 'node:perf_hooks';
import { ValidationError } from '@clinicalsuite/kit';
import {
  codeQueries,
  documentBudgetBytes,
  documentMessages,
  mergeCandidates,
  type CodeHit,
  type DocumentTask,
  type QueryHits,
} from '../domain/pipelines.js';
import type { SubserviceId, Subservices, Upload } from '../domain/subservices.js';
import type { ChatMessage, ConcreteIntent, Language, LlmResult, UpstreamId } from '../domain/types.js';
import type { AgentCodeType, Step } from '../schemas/subservices.js';
import type { UseCaseDeps } from './ports.js';

/**
 * What the sub-service use cases and the pipelines share: timing steps, an LLM call on a document,
 * the code search over a document's lines, and a transcript or a text that must not be empty.
 */

export type StepDeps = Pick<UseCaseDeps, 'config' | 'router' | 'metrics'> & {
  readonly subservices: Subservices;
};

/** Runs and times the steps of one request; pipelines also observe `agent_pipeline_step_duration_seconds`. */
export class StepTimer {
  readonly steps: Step[] = [];

  constructor(
    private readonly deps: Pick<StepDeps, 'metrics'>,
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
      this.deps.metrics.pipelineSteps.observe({ pipeline: this.pipeline, step: name }, ms / 1000);
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
export function finishTiming(deps: Pick<StepDeps, 'metrics'>, since: number, timer: StepTimer): number {
  const total = performance.now() - since;
  deps.metrics.overhead.observe(Math.max(0, total - timer.total) / 1000);
  return round(total);
}

/** One LLM call through the router, with the agent's token and temperature settings. */
export function complete(
  deps: Pick<StepDeps, 'config' | 'router'>,
  messages: readonly ChatMessage[],
  intent: ConcreteIntent,
  signal: AbortSignal,
  jsonSchema?: { name: string; schema: Record<string, unknown> },
): Promise<LlmResult> {
  return deps.router.complete(
    {
      messages,
      intent,
      maxTokens: deps.config.AGENT_MAX_TOKENS,
      temperature: deps.config.AGENT_TEMPERATURE,
      ...(jsonSchema === undefined ? {} : { jsonSchema }),
    },
    signal,
  );
}

/** UTF-8 bytes of document a prompt may carry with the agent's context and reply settings. */
export function documentBudget(deps: Pick<StepDeps, 'config'>): number {
  return documentBudgetBytes(deps.config.AGENT_CONTEXT_TOKENS, deps.config.AGENT_MAX_TOKENS);
}

export interface DocumentAnalysis {
  readonly text: string;
  readonly model: UpstreamId;
  readonly truncated: boolean;
}

/** `task` on `text` as a timed step: the LLM's text, the upstream that answered, whether the text was cut. */
export async function analyseDocument(
  deps: Pick<StepDeps, 'config' | 'router'>,
  timer: StepTimer,
  step: string,
  task: DocumentTask,
  text: string,
  language: Language,
  intent: ConcreteIntent,
  signal: AbortSignal,
): Promise<DocumentAnalysis> {
  const prompt = documentMessages(task, text, language, documentBudget(deps));
  const result = await timer.run(
    step,
    {
      model: (r) => r.model,
      detail: () => (prompt.truncated ? 'the text was cut to fit the model’s context' : null),
    },
    () => complete(deps, prompt.messages, intent, signal),
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
  subs: Subservices,
  text: string,
  types: readonly AgentCodeType[],
  signal: AbortSignal,
): Promise<DocumentCodes> {
  // Asking for codes without a code search is the 503 naming CODE_SEARCH_URL, even for a blank text.
  subs.ensureConfigured('codesearch');
  const queries = codeQueries(text, MAX_QUERIES, MAX_QUERY_CHARS);
  const answers = new Array<Awaited<ReturnType<Subservices['search']>>>(queries.length);
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

/** A recording's transcript as a timed step; no speech is 422 (nothing to work on). */
export async function transcript(
  deps: Pick<StepDeps, 'subservices'>,
  timer: StepTimer,
  upload: Upload,
  language: Language,
  signal: AbortSignal,
): Promise<string> {
  const stt = await timer.run(
    'transcribe',
    { subservice: 'stt', detail: (r) => `${r.text.length} characters` },
    () => deps.subservices.transcribe(upload, language, signal),
  );
  const text = stt.text.trim();
  if (text === '') {
    throw new ValidationError([
      {
        loc: ['body', 'file'],
        msg: 'no speech was recognised in the audio: nothing to work on',
        type: 'no_speech',
      },
    ]);
  }
  return text;
}

/** An image's text as a timed step; no text is 422 (nothing to work on). */
export async function ocrText(
  deps: Pick<StepDeps, 'subservices'>,
  timer: StepTimer,
  upload: Upload,
  signal: AbortSignal,
): Promise<{ text: string; meanConfidence: number | null }> {
  const ocr = await timer.run(
    'ocr',
    { subservice: 'ocr', detail: (r) => `${r.text.length} characters` },
    () => deps.subservices.ocr(upload, signal),
  );
  const text = ocr.text.trim();
  if (text === '') {
    throw new ValidationError([
      { loc: ['body', 'file'], msg: 'no text was found in the image: nothing to work on', type: 'no_text' },
    ]);
  }
  return { text, meanConfidence: ocr.raw.mean_confidence ?? null };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
