import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
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
import type { RoutesContext } from './context.js';
import { SUBSERVICE_RESPONSES, requireUpload, uploadParser } from './uploads.js';

/**
 * The sub-service endpoints: `/transcribe`, `/ocr`, `/face` (multipart uploads, at most
 * AGENT_UPLOAD_MAX_BYTES), `/tts`, `/search`, `/patient` (JSON). Each forwards to its sub-service
 * through the clients (deadline, abort, errors naming the sub-service: see
 * adapters/subservices/endpoint.ts) and answers with `intent`, `model` (the LLM that answered, null
 * when none was used) and `processing_time_ms`; the upload endpoints also time each step. What each
 * does is its use case's (use-cases/transcription.ts, document-ocr.ts, face-recognition.ts,
 * speech.ts, code-search.ts, patient-talk.ts).
 */

export function subserviceRoutes(ctx: RoutesContext): AnyRoute[] {
  return [
    transcribeRoute(ctx),
    ocrRoute(ctx),
    faceRoute(ctx),
    ttsRoute(ctx),
    searchRoute(ctx),
    patientRoute(ctx),
  ];
}

function transcribeRoute({ config, useCases }: RoutesContext): AnyRoute {
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
    bodyParser: uploadParser(config),
    response: TranscribeResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: ({ body, req, signal, admittedAt }) =>
      useCases.transcribe(
        {
          upload: requireUpload(req, ['file'], 'an audio file'),
          language: body.language,
          analyze: body.analyze,
        },
        { signal, since: admittedAt },
      ),
  });
}

function ocrRoute({ config, useCases }: RoutesContext): AnyRoute {
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
    bodyParser: uploadParser(config),
    response: OcrResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: ({ body, req, signal, admittedAt }) =>
      useCases.readDocument(
        {
          upload: requireUpload(req, ['file'], 'an image or PDF'),
          language: body.language,
          analyze: body.analyze,
          search: body.search,
        },
        { signal, since: admittedAt },
      ),
  });
}

function faceRoute({ config, useCases }: RoutesContext): AnyRoute {
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
    bodyParser: uploadParser(config, ['file', 'image']),
    response: FaceResponseSchema,
    responses: SUBSERVICE_RESPONSES,
    requiresReady: false,
    handler: ({ body, req, signal, admittedAt }) =>
      useCases.recognizeFaces(
        {
          upload: requireUpload(req, ['file', 'image'], 'an image'),
          confidenceThreshold: body.confidence_threshold,
        },
        { signal, since: admittedAt },
      ),
  });
}

function ttsRoute({ useCases }: RoutesContext): AnyRoute {
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
    handler: ({ body, signal, admittedAt }) => useCases.speak(body, { signal, since: admittedAt }),
  });
}

function searchRoute({ useCases }: RoutesContext): AnyRoute {
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
    handler: ({ body, signal, admittedAt }) => useCases.searchCodes(body, { signal, since: admittedAt }),
  });
}

function patientRoute({ useCases }: RoutesContext): AnyRoute {
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
    handler: ({ body, signal, admittedAt }) => useCases.talkToPatient(body, { signal, since: admittedAt }),
  });
}
