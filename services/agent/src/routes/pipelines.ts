import { BadGatewayError, ValidationError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import type { SubserviceClients } from '../adapters/subservices/index.js';
import {
  DISCLAIMERS,
  codeSelectionMessages,
  cutCodePoints,
  codeSelectionSchema,
  parseCodeSelection,
} from '../domain/pipelines.js';
import type { Language, UpstreamId } from '../domain/types.js';
import {
  AudioConsultResponseSchema,
  AudioDiagnosisResponseSchema,
  ImageAnalysisResponseSchema,
  ImageCodesResponseSchema,
  PipelineFormSchema,
} from '../schemas/subservices.js';
import type { AgentRuntime } from './runtime.js';
import {
  DOCUMENT_CODE_TYPES,
  StepTimer,
  SUBSERVICE_RESPONSES,
  analyseDocument,
  complete,
  documentBudget,
  documentCodes,
  finishTiming,
  requireUpload,
  uploadParser,
} from './shared-steps.js';

/**
 * The four pipelines (multipart `file` + `language`), each step timed in `steps` and observed in
 * `agent_pipeline_step_duration_seconds{pipeline,step}`:
 *
 * - `audio-to-diagnosis`: transcribe (stt) → analysis (LLM: symptoms, warning signs, what to consider);
 * - `audio-full-consult`: transcribe (stt) → consultation (LLM reply to the patient) → tts (the reply
 *   spoken: `audio_base64`);
 * - `image-to-codes`: ocr → code_search (every line and clause of the text searched as ICD-10/ICPC-2) →
 *   code_selection (the LLM chooses among the code search's candidates only: its JSON schema's enum is
 *   the candidate list, and the answer is checked again; whatever else it names is `discarded`);
 * - `image-full-analysis`: ocr → analysis (LLM, detailed).
 *
 * A recording with no speech or an image with no text is 422 (nothing to work on). A step's failure
 * fails the request with that step's error (the sub-service or LLM named). Clinical output carries
 * `disclaimer`: an automated analysis, not a diagnosis.
 */

/** Longest reply the consultation speaks (the tts service's default TTS_MAX_CHARS). */
const MAX_SPOKEN_CHARS = 5000;

const SPEAKABLE = /[\p{L}\p{N}]/u;

export function pipelineRoutes(rt: AgentRuntime, subs: SubserviceClients): AnyRoute[] {
  return [
    audioToDiagnosisRoute(rt, subs),
    audioFullConsultRoute(rt, subs),
    imageToCodesRoute(rt, subs),
    imageFullAnalysisRoute(rt, subs),
  ];
}

const RESPONSES = {
  ...SUBSERVICE_RESPONSES,
  422: { description: 'A field is invalid, the file is missing, or it holds no speech / no text to work on' },
} as const;

async function transcript(
  subs: SubserviceClients,
  timer: StepTimer,
  upload: Parameters<SubserviceClients['transcribe']>[0],
  language: Language,
  signal: AbortSignal,
): Promise<string> {
  const stt = await timer.run(
    'transcribe',
    { subservice: 'stt', detail: (r) => `${r.text.length} characters` },
    () => subs.transcribe(upload, language, signal),
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

async function ocrText(
  subs: SubserviceClients,
  timer: StepTimer,
  upload: Parameters<SubserviceClients['ocr']>[0],
  signal: AbortSignal,
): Promise<{ text: string; meanConfidence: number | null }> {
  const ocr = await timer.run(
    'ocr',
    { subservice: 'ocr', detail: (r) => `${r.text.length} characters` },
    () => subs.ocr(upload, signal),
  );
  const text = ocr.text.trim();
  if (text === '') {
    throw new ValidationError([
      { loc: ['body', 'file'], msg: 'no text was found in the image: nothing to work on', type: 'no_text' },
    ]);
  }
  return { text, meanConfidence: ocr.raw.mean_confidence ?? null };
}

function audioToDiagnosisRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  const pipeline = 'audio-to-diagnosis';
  return defineRoute({
    method: 'post',
    path: `/pipeline/${pipeline}`,
    summary: 'Speech to text, then the LLM analyses the symptoms described',
    description:
      'multipart/form-data: `file` (audio), `language` (`vi` or `en`, default `vi`). Steps: transcribe (stt), ' +
      'analysis (LLM: each symptom, warning signs, conditions worth considering with the reason, questions to ' +
      'ask). Not a diagnosis: see `disclaimer`.',
    tags: ['pipelines'],
    body: PipelineFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: uploadParser(rt),
    response: AudioDiagnosisResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: async ({ body, req, signal, admittedAt }) => {
      const upload = requireUpload(req, ['file'], 'an audio file');
      rt.metrics.intents.inc({ intent: 'analyze', source: 'fixed' });
      const timer = new StepTimer(rt, pipeline);
      const text = await transcript(subs, timer, upload, body.language, signal);
      const analysis = await analyseDocument(
        rt,
        timer,
        'analysis',
        'symptom_analysis',
        text,
        body.language,
        'analyze',
        signal,
      );
      return {
        pipeline,
        intent: 'analyze' as const,
        model: analysis.model,
        language: body.language,
        transcript: text,
        analysis: analysis.text,
        disclaimer: DISCLAIMERS[body.language],
        truncated: analysis.truncated,
        steps: timer.steps,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function audioFullConsultRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  const pipeline = 'audio-full-consult';
  return defineRoute({
    method: 'post',
    path: `/pipeline/${pipeline}`,
    summary: 'Speech to text, an LLM consultation reply, and the reply spoken (audio_base64)',
    description:
      'multipart/form-data: `file` (audio), `language` (`vi` or `en`, default `vi`). Steps: transcribe (stt), ' +
      'consultation (LLM), tts (the reply as WAV, base64 in `audio_base64`; a reply over 5000 characters is ' +
      'spoken up to there, which the tts step says). `text` is the reply, `transcript` what was heard.',
    tags: ['pipelines'],
    body: PipelineFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: uploadParser(rt),
    response: AudioConsultResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: async ({ body, req, signal, admittedAt }) => {
      const upload = requireUpload(req, ['file'], 'an audio file');
      rt.metrics.intents.inc({ intent: 'chat', source: 'fixed' });
      // Fail before any work when the reply could not be spoken.
      subs.endpoints.tts.ensureConfigured();
      const timer = new StepTimer(rt, pipeline);
      const text = await transcript(subs, timer, upload, body.language, signal);
      const reply = await analyseDocument(
        rt,
        timer,
        'consultation',
        'consultation',
        text,
        body.language,
        'chat',
        signal,
      );
      if (!SPEAKABLE.test(reply.text)) {
        throw new BadGatewayError(
          `The consultation reply from ${reply.model} has nothing to speak (no letter or digit)`,
        );
      }
      const spoken = cutCodePoints(reply.text, MAX_SPOKEN_CHARS);
      const cut = spoken.length < reply.text.length;
      const audio = await timer.run(
        'tts',
        {
          subservice: 'tts',
          detail: () => (cut ? `the reply was spoken up to ${MAX_SPOKEN_CHARS} characters` : null),
        },
        () => subs.speak({ text: spoken, language: body.language, speed: 1, format: 'wav' }, signal),
      );
      return {
        pipeline,
        intent: 'chat' as const,
        model: reply.model,
        language: body.language,
        transcript: text,
        text: reply.text,
        audio_base64: audio.audio_base64,
        audio: {
          format: audio.format,
          mime_type: audio.mime_type,
          sample_rate: audio.sample_rate,
          duration_seconds: audio.duration_seconds,
          engine: audio.engine,
          voice: audio.voice,
        },
        disclaimer: DISCLAIMERS[body.language],
        truncated: reply.truncated,
        steps: timer.steps,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function imageToCodesRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  const pipeline = 'image-to-codes';
  return defineRoute({
    method: 'post',
    path: `/pipeline/${pipeline}`,
    summary: 'OCR, then ICD-10/ICPC-2 codes: the code search proposes, the LLM chooses among its proposals',
    description:
      'multipart/form-data: `file` (image), `language` (`vi` or `en`, default `vi`: the reasons’ language). ' +
      'Steps: ocr; code_search (each line and clause of the text is searched as ICD10 and ICPC2 codes; the ' +
      'distinct codes found are `candidates`); code_selection (the LLM picks the codes the document supports, ' +
      'with a reason, from the candidates only: a JSON schema restricts it to them and its answer is checked; ' +
      'anything else it names is listed in `discarded`, never in `codes`). No candidates: no LLM call ' +
      '(`model` null). Every code returned came from the code search.',
    tags: ['pipelines'],
    body: PipelineFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: uploadParser(rt),
    response: ImageCodesResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: async ({ body, req, signal, admittedAt }) => {
      const upload = requireUpload(req, ['file'], 'an image');
      rt.metrics.intents.inc({ intent: 'search_code', source: 'fixed' });
      subs.endpoints.codesearch.ensureConfigured();
      const timer = new StepTimer(rt, pipeline);
      const { text } = await ocrText(subs, timer, upload, signal);
      const found = await timer.run(
        'code_search',
        {
          subservice: 'codesearch',
          detail: (c) => `${c.queries.length} queries, ${c.candidates.length} candidate codes`,
        },
        () => documentCodes(subs, text, DOCUMENT_CODE_TYPES, signal),
      );
      let model: UpstreamId | null = null;
      let selection: ReturnType<typeof parseCodeSelection> = { selected: [], discarded: [], error: null };
      let truncated = false;
      if (found.candidates.length === 0) {
        timer.skip(
          'code_selection',
          'the code search proposed no codes for this text: nothing to choose from',
        );
      } else {
        const prompt = codeSelectionMessages(text, found.candidates, body.language, documentBudget(rt));
        truncated = prompt.truncated;
        const result = await timer.run(
          'code_selection',
          { model: (r) => r.model, detail: () => `${found.candidates.length} candidates` },
          () =>
            complete(rt, prompt.messages, 'search_code', signal, {
              name: 'code_selection',
              schema: codeSelectionSchema(found.candidates),
            }),
        );
        model = result.model;
        selection = parseCodeSelection(result.text, found.candidates);
      }
      return {
        pipeline,
        intent: 'search_code' as const,
        model,
        language: body.language,
        text,
        codes: selection.selected.map((s) => ({
          code: s.candidate.code,
          type: s.candidate.type,
          title: s.candidate.title,
          title_vi: s.candidate.title_vi,
          title_en: s.candidate.title_en,
          score: s.candidate.score,
          reason: s.reason,
        })),
        candidates: found.candidates.map(({ ref: _ref, ...c }) => c),
        discarded: [...selection.discarded],
        selection_error: selection.error,
        queries: found.queries.map((q) => q.query),
        code_types: found.code_types,
        missing_types: found.missing_types,
        warnings: found.warnings,
        disclaimer: DISCLAIMERS[body.language],
        truncated,
        steps: timer.steps,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}

function imageFullAnalysisRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  const pipeline = 'image-full-analysis';
  return defineRoute({
    method: 'post',
    path: `/pipeline/${pipeline}`,
    summary: 'OCR, then a detailed LLM analysis of the document',
    description:
      'multipart/form-data: `file` (image), `language` (`vi` or `en`, default `vi`). Steps: ocr, analysis (LLM: ' +
      'document type, patient details as written, history, findings and results against written reference ' +
      'ranges, diagnoses and treatments written, inconsistencies, follow-up). Not a diagnosis: see `disclaimer`.',
    tags: ['pipelines'],
    body: PipelineFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: uploadParser(rt),
    response: ImageAnalysisResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: async ({ body, req, signal, admittedAt }) => {
      const upload = requireUpload(req, ['file'], 'an image');
      rt.metrics.intents.inc({ intent: 'analyze', source: 'fixed' });
      const timer = new StepTimer(rt, pipeline);
      const { text, meanConfidence } = await ocrText(subs, timer, upload, signal);
      const analysis = await analyseDocument(
        rt,
        timer,
        'analysis',
        'detailed_analysis',
        text,
        body.language,
        'analyze',
        signal,
      );
      return {
        pipeline,
        intent: 'analyze' as const,
        model: analysis.model,
        language: body.language,
        text,
        mean_confidence: meanConfidence,
        analysis: analysis.text,
        disclaimer: DISCLAIMERS[body.language],
        truncated: analysis.truncated,
        steps: timer.steps,
        processing_time_ms: finishTiming(rt, admittedAt, timer),
      };
    },
  });
}
