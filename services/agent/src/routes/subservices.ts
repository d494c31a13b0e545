import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  ValidationError,
  defineRoute,
  multipart,
  uploadedFiles,
  type AnyRoute,
} from '@clinicalsuite/kit';
import type { SubserviceClients } from '../adapters/subservices/index.js';
import {
  DISCLAIMERS,
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
import {
  FaceFormSchema,
  FaceResponseSchema,
  OcrFormSchema,
  OcrResponseSchema,
  PatientRequestSchema,
  PatientResponseSchema,
  SearchRequestSchema,
  SearchResponseSchema,
  TranscribeFormSchema,
  TranscribeResponseSchema,
  TtsRequestSchema,
  TtsResponseSchema,
  type AgentCodeType,
  type Step,
} from '../schemas/subservices.js';
import type { AgentRuntime } from './runtime.js';

/**
 * The sub-service endpoints: `/transcribe`, `/ocr`, `/face` (multipart uploads, at most
 * AGENT_UPLOAD_MAX_BYTES), `/tts`, `/search`, `/patient` (JSON). Each forwards to its sub-service
 * through the clients (deadline, abort, errors naming the sub-service: see
 * adapters/subservices/endpoint.ts) and answers with `intent`, `model` (the LLM that answered, null
 * when none was used) and `processing_time_ms`; the upload endpoints also time each step.
 *
 * Also the pieces the pipelines share: reading an upload, timing steps, an LLM call on a document,
 * and the code search over a document's lines.
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
    description: 'The sub-service is unreachable or failed, or every LLM failed (the message names which)',
  },
  503: {
    description: 'The sub-service is not configured (names its `<NAME>_URL`) or not ready (its reason)',
  },
  504: { description: 'The sub-service did not answer within AGENT_SUBSERVICE_TIMEOUT_MS' },
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

function counted(rt: AgentRuntime, intent: ConcreteIntent): void {
  rt.metrics.intents.inc({ intent, source: 'fixed' });
}

export function subserviceRoutes(rt: AgentRuntime, subs: SubserviceClients): AnyRoute[] {
  return [
    transcribeRoute(rt, subs),
    ocrRoute(rt, subs),
    faceRoute(rt, subs),
    ttsRoute(rt, subs),
    searchRoute(rt, subs),
    patientRoute(rt, subs),
  ];
}

function transcribeRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/transcribe',
    summary: 'Speech to text (the stt sub-service), optionally analysed by the LLM',
    description:
      'multipart/form-data: `file` (WAV, MP3 or OGG audio, required), `language` (`vi` or `en`, default `vi`), ' +
      '`analyze` (default false: the LLM then analyses the transcript in `language`). The answer holds the ' +
      "transcript, the stt service's whole answer (`transcription`: segments, duration, engine) and, with " +
      '`analyze`, the analysis and its `disclaimer`. Silence gives an empty text and no analysis.',
    tags: ['sub-services'],
    body: TranscribeFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: uploadParser(rt),
    response: TranscribeResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: async ({ body, req, signal, admittedAt }) => {
      const upload = requireUpload(req, ['file'], 'an audio file');
      counted(rt, 'transcribe');
      const timer = new StepTimer(rt, null);
      const stt = await timer.run('transcribe', { subservice: 'stt' }, () =>
        subs.transcribe(upload, body.language, signal),
      );
      let analysis: DocumentAnalysis | null = null;
      if (body.analyze) {
        if (stt.text.trim() === '') timer.skip('analysis', 'no speech was recognised: nothing to analyse');
        else
          analysis = await analyseDocument(
            rt,
            timer,
            'analysis',
            'transcript_analysis',
            stt.text,
            body.language,
            'analyze',
            signal,
          );
      }
      return {
        intent: 'transcribe' as const,
        model: analysis?.model ?? null,
        text: stt.text,
        language: stt.language,
        transcription: stt.raw,
        analysis: analysis?.text ?? null,
        disclaimer: analysis === null ? null : DISCLAIMERS[body.language],
        steps: timer.steps,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function ocrRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/ocr',
    summary:
      'Text from an image or PDF (the ocr sub-service), optionally analysed and looked up in the code search',
    description:
      'multipart/form-data: `file` (JPEG, PNG, WebP, TIFF or PDF, required), `analyze` (default false: the LLM ' +
      'analyses the text in `language`), `search` (default false: each line and clause of the text is searched ' +
      'as ICD-10 and ICPC-2 codes; `codes` lists what each query found and the distinct candidates), `language` ' +
      "(`vi` or `en`, default `vi`: the analysis' language; OCR itself reads Vietnamese and English).",
    tags: ['sub-services'],
    body: OcrFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: uploadParser(rt),
    response: OcrResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: async ({ body, req, signal, admittedAt }) => {
      const upload = requireUpload(req, ['file'], 'an image or PDF');
      counted(rt, 'ocr');
      // Asked for codes without a code search: the 503 before any work.
      if (body.search) subs.endpoints.codesearch.ensureConfigured();
      const timer = new StepTimer(rt, null);
      const ocr = await timer.run('ocr', { subservice: 'ocr' }, () => subs.ocr(upload, signal));
      const empty = ocr.text.trim() === '';
      let codes: DocumentCodes | null = null;
      if (body.search) {
        codes = await timer.run(
          'code_search',
          {
            subservice: 'codesearch',
            detail: (c) => `${c.queries.length} queries, ${c.candidates.length} codes`,
          },
          () => documentCodes(subs, ocr.text, DOCUMENT_CODE_TYPES, signal),
        );
      }
      let analysis: DocumentAnalysis | null = null;
      if (body.analyze) {
        if (empty) timer.skip('analysis', 'no text was found in the image: nothing to analyse');
        else
          analysis = await analyseDocument(
            rt,
            timer,
            'analysis',
            'ocr_analysis',
            ocr.text,
            body.language,
            'analyze',
            signal,
          );
      }
      return {
        intent: 'ocr' as const,
        model: analysis?.model ?? null,
        text: ocr.text,
        ocr: ocr.raw,
        analysis: analysis?.text ?? null,
        disclaimer: analysis === null ? null : DISCLAIMERS[body.language],
        codes,
        steps: timer.steps,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function faceRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/face',
    summary: 'Recognize the faces in an image (the face sub-service)',
    description:
      'multipart/form-data: the image (JPEG or PNG) in `file` or `image`, optional `confidence_threshold` (0..1). ' +
      "Every face found, matched against the face service's registered persons.",
    tags: ['sub-services'],
    body: FaceFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: uploadParser(rt, ['file', 'image']),
    response: FaceResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: async ({ body, req, signal, admittedAt }) => {
      const upload = requireUpload(req, ['file', 'image'], 'an image');
      counted(rt, 'face_recognize');
      const timer = new StepTimer(rt, null);
      const face = await timer.run('recognize', { subservice: 'face' }, () =>
        subs.recognizeFaces(upload, { confidenceThreshold: body.confidence_threshold }, signal),
      );
      return {
        intent: 'face_recognize' as const,
        model: null,
        message: face.message,
        faces_detected: face.data.faces_detected,
        faces: face.data.faces,
        recognition: face.data,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function ttsRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/tts',
    summary: 'Text to speech (the tts sub-service): the audio in base64 with its format, rate and duration',
    description:
      'JSON: `text` (required), `language` (`vi` or `en`, default `vi`), `speed` (0.5 to 2.0, default 1.0), ' +
      '`format` (`wav` or `mp3`, default `wav`). The answer carries the audio file as `audio_base64` and ' +
      '`format`, `mime_type`, `sample_rate` (Hz), `duration_seconds`, and which engine and voice spoke.',
    tags: ['sub-services'],
    body: TtsRequestSchema,
    response: TtsResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: async ({ body, signal, admittedAt }) => {
      counted(rt, 'tts');
      const timer = new StepTimer(rt, null);
      const audio = await timer.run('tts', { subservice: 'tts' }, () => subs.speak(body, signal));
      return {
        intent: 'tts' as const,
        model: null,
        audio_base64: audio.audio_base64,
        format: audio.format,
        mime_type: audio.mime_type,
        sample_rate: audio.sample_rate,
        duration_seconds: audio.duration_seconds,
        size_bytes: audio.size_bytes,
        engine: audio.engine,
        voice: audio.voice,
        language: audio.language,
        speed: audio.speed,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function searchRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/search',
    summary: 'Medical code search (the codesearch sub-service)',
    description:
      'JSON: `query` (required), `code_types` (null for all, or some of ICD10, ICPC2, CPT, SERVICE, PROCEDURE), ' +
      '`top_k` (default 10), `hybrid` (default true). A requested type the code search has no codes for is ' +
      'listed in `missing_types` (with a warning saying how to load it), not an error.',
    tags: ['sub-services'],
    body: SearchRequestSchema,
    response: SearchResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: async ({ body, signal, admittedAt }) => {
      counted(rt, 'search_code');
      const timer = new StepTimer(rt, null);
      const found = await timer.run('code_search', { subservice: 'codesearch' }, () =>
        subs.search(body, signal),
      );
      return {
        intent: 'search_code' as const,
        model: null,
        query: found.query,
        mode: found.mode,
        mode_reason: found.mode_reason ?? null,
        code_types: found.code_types,
        missing_types: found.missing_types,
        warnings: found.warnings,
        expansions: found.expansions ?? [],
        results: found.results,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function patientRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/patient',
    summary: 'Talk to a simulated patient (the patient_sim sub-service)',
    description:
      'JSON: `message` (what the clinician says or does), `patient_id` (a case id), `session_id` (the ' +
      'conversation; null: a new one). Forwarded to the patient simulator; its answer (reply, revealed facts, ' +
      'findings, session) comes back with `patient_model`, the model the simulator used. `model` is null: ' +
      "the agent's own LLMs are not used.",
    tags: ['sub-services'],
    body: PatientRequestSchema,
    response: PatientResponseSchema,
    responses: { ...SUBSERVICE_RESPONSES, 404: { description: 'patient_sim: unknown patient_id' } },
    requiresReady: false,
    handler: async ({ body, signal, admittedAt }) => {
      counted(rt, 'patient_sim');
      const timer = new StepTimer(rt, null);
      const turn = await timer.run('patient', { subservice: 'patient_sim' }, () =>
        subs.patient(body, signal),
      );
      const { model: patientModel, processing_time_ms: _simulatorMs, ...rest } = turn;
      return {
        ...rest,
        intent: 'patient_sim' as const,
        model: null,
        patient_model: patientModel ?? null,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
