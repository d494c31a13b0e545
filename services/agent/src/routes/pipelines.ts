import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import {
  AudioConsultResponseSchema,
  AudioDiagnosisResponseSchema,
  ImageAnalysisResponseSchema,
  ImageCodesResponseSchema,
  PipelineFormSchema,
} from '../schemas/subservices.js';
import type { RoutesContext } from './context.js';
import { SUBSERVICE_RESPONSES, requireUpload, uploadParser } from './uploads.js';

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
 * `disclaimer`: an automated analysis, not a diagnosis. Each is a use case of the same name in
 * use-cases/.
 */

export function pipelineRoutes(ctx: RoutesContext): AnyRoute[] {
  return [
    audioToDiagnosisRoute(ctx),
    audioFullConsultRoute(ctx),
    imageToCodesRoute(ctx),
    imageFullAnalysisRoute(ctx),
  ];
}

const RESPONSES = {
  ...SUBSERVICE_RESPONSES,
  422: { description: 'A field is invalid, the file is missing, or it holds no speech / no text to work on' },
} as const;

function audioToDiagnosisRoute({ config, useCases }: RoutesContext): AnyRoute {
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
    bodyParser: uploadParser(config),
    response: AudioDiagnosisResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: ({ body, req, signal, admittedAt }) =>
      useCases.pipelines.audioToDiagnosis(
        { upload: requireUpload(req, ['file'], 'an audio file'), language: body.language },
        { signal, since: admittedAt },
      ),
  });
}

function audioFullConsultRoute({ config, useCases }: RoutesContext): AnyRoute {
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
    bodyParser: uploadParser(config),
    response: AudioConsultResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: ({ body, req, signal, admittedAt }) =>
      useCases.pipelines.audioFullConsult(
        { upload: requireUpload(req, ['file'], 'an audio file'), language: body.language },
        { signal, since: admittedAt },
      ),
  });
}

function imageToCodesRoute({ config, useCases }: RoutesContext): AnyRoute {
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
    bodyParser: uploadParser(config),
    response: ImageCodesResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: ({ body, req, signal, admittedAt }) =>
      useCases.pipelines.imageToCodes(
        { upload: requireUpload(req, ['file'], 'an image'), language: body.language },
        { signal, since: admittedAt },
      ),
  });
}

function imageFullAnalysisRoute({ config, useCases }: RoutesContext): AnyRoute {
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
    bodyParser: uploadParser(config),
    response: ImageAnalysisResponseSchema,
    responses: RESPONSES,
    requiresReady: false,
    handler: ({ body, req, signal, admittedAt }) =>
      useCases.pipelines.imageFullAnalysis(
        { upload: requireUpload(req, ['file'], 'an image'), language: body.language },
        { signal, since: admittedAt },
      ),
  });
}
