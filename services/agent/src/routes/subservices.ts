import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import type { SubserviceClients } from '../adapters/subservices/index.js';
import { DISCLAIMERS } from '../domain/pipelines.js';
import type { ConcreteIntent } from '../domain/types.js';
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
} from '../schemas/subservices.js';
import type { AgentRuntime } from './runtime.js';
import {
  DOCUMENT_CODE_TYPES,
  SUBSERVICE_RESPONSES,
  StepTimer,
  analyseDocument,
  documentCodes,
  finishTiming,
  requireUpload,
  uploadParser,
  type DocumentAnalysis,
  type DocumentCodes,
} from './shared-steps.js';

/**
 * The sub-service endpoints: `/transcribe`, `/ocr`, `/face` (multipart uploads, at most
 * AGENT_UPLOAD_MAX_BYTES), `/tts`, `/search`, `/patient` (JSON). Each forwards to its sub-service
 * through the clients (deadline, abort, errors naming the sub-service: see
 * adapters/subservices/endpoint.ts) and answers with `intent`, `model` (the LLM that answered, null
 * when none was used) and `processing_time_ms`; the upload endpoints also time each step.
 * The pieces they share with the pipelines are in shared-steps.ts.
 */

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
