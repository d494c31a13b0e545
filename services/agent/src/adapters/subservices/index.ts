import type { Logger } from '@clinicalsuite/kit';
import type { AgentConfig } from '../../config.js';
import {
  SUBSERVICE_IDS,
  type CodeSearchBody,
  type FaceBody,
  type OcrResult,
  type PatientBody,
  type PatientRequest,
  type SearchRequest,
  type SpeakRequest,
  type SubserviceId,
  type Subservices,
  type TranscriptionResult,
  type TtsBody,
  type Upload,
} from '../../domain/subservices.js';
import type { Language } from '../../domain/types.js';
import type { AgentMetrics } from '../../metrics.js';
import {
  CodeSearchBodySchema,
  FaceBodySchema,
  OcrBodySchema,
  PatientBodySchema,
  SttBodySchema,
  TtsBodySchema,
  type AgentCodeType,
} from '../../schemas/subservices.js';
import { subserviceToken, subserviceUrl } from '../../domain/subservice-catalogue.js';
import { SubserviceEndpoint, type SubserviceHealth } from './endpoint.js';

export { SUBSERVICE_CATALOGUE, label, type SubserviceEntry } from '../../domain/subservice-catalogue.js';
export { SubserviceEndpoint, messageOf, notConfigured, type SubserviceHealth } from './endpoint.js';

/**
 * The agent's clients of its six sub-services, one HTTP endpoint each (see endpoint.ts for the
 * deadline, abort and error policy):
 *
 * | sub-service  | call                                   | body                                          |
 * | ------------ | -------------------------------------- | --------------------------------------------- |
 * | stt          | `POST /transcribe`                     | multipart `file`, `language`                  |
 * | ocr          | `POST /ocr`                            | multipart `file`                              |
 * | tts          | `POST /tts`                            | JSON, `response_format: base64`               |
 * | codesearch   | `POST /search`                         | JSON `query`, `code_types`, `top_k`, `hybrid` |
 * | patient_sim  | `POST /patient`                        | JSON `message`, `patient_id`, `session_id`    |
 * | face         | `POST /recognize_faces`                | multipart `file`, `confidence_threshold`      |
 *
 * and `GET /health` of each for /status.
 */

/**
 * The agent's code types are the code search's own (its `GET /code_types`: ICD10, ICPC2, CPT,
 * SERVICE, PROCEDURE), so they pass unchanged; the code search reports a type it has no codes for in
 * `missing_types`. Kept as a table so a renamed type has one place to change.
 */
export const CODE_TYPE_MAP: Readonly<Record<AgentCodeType, string>> = {
  ICD10: 'ICD10',
  ICPC2: 'ICPC2',
  CPT: 'CPT',
  SERVICE: 'SERVICE',
  PROCEDURE: 'PROCEDURE',
};

export interface SubserviceClientsDeps {
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
}

export class SubserviceClients implements Subservices {
  readonly endpoints: Readonly<Record<SubserviceId, SubserviceEndpoint>>;
  private readonly statusTimeoutMs: number;

  constructor(config: AgentConfig, deps: SubserviceClientsDeps) {
    const make = (id: SubserviceId): SubserviceEndpoint =>
      new SubserviceEndpoint(id, subserviceUrl(config, id), {
        token: subserviceToken(config, id),
        metrics: deps.metrics,
        logger: deps.logger,
        timeoutMs: config.AGENT_SUBSERVICE_TIMEOUT_MS,
      });
    this.endpoints = {
      stt: make('stt'),
      ocr: make('ocr'),
      tts: make('tts'),
      codesearch: make('codesearch'),
      patient_sim: make('patient_sim'),
      face: make('face'),
    };
    this.statusTimeoutMs = config.AGENT_STATUS_TIMEOUT_MS;
  }

  /** Whether the sub-service's URL is set. */
  configured(id: SubserviceId): boolean {
    return this.endpoints[id].configured;
  }

  /** Throws the 503 naming the sub-service's `<NAME>_URL` when it is not configured. */
  ensureConfigured(id: SubserviceId): void {
    this.endpoints[id].ensureConfigured();
  }

  async transcribe(file: Upload, language: Language, signal: AbortSignal): Promise<TranscriptionResult> {
    const form = fileForm(file);
    form.append('language', language);
    const body = await this.endpoints.stt.call(
      { method: 'POST', path: '/transcribe', body: form },
      SttBodySchema,
      signal,
    );
    return { text: body.text, language: body.language, raw: body };
  }

  async ocr(file: Upload, signal: AbortSignal): Promise<OcrResult> {
    const body = await this.endpoints.ocr.call(
      { method: 'POST', path: '/ocr', body: fileForm(file) },
      OcrBodySchema,
      signal,
    );
    return { text: body.text, raw: body };
  }

  /** The audio as base64 with its format, rate and duration (the tts service's base64 answer). */
  async speak(request: SpeakRequest, signal: AbortSignal): Promise<TtsBody> {
    return this.endpoints.tts.call(
      {
        method: 'POST',
        path: '/tts',
        body: { ...request, response_format: 'base64' },
      },
      TtsBodySchema,
      signal,
    );
  }

  async search(request: SearchRequest, signal: AbortSignal): Promise<CodeSearchBody> {
    return this.endpoints.codesearch.call(
      {
        method: 'POST',
        path: '/search',
        body: {
          query: request.query,
          code_types: request.code_types === null ? null : request.code_types.map((t) => CODE_TYPE_MAP[t]),
          top_k: request.top_k,
          hybrid: request.hybrid,
        },
      },
      CodeSearchBodySchema,
      signal,
    );
  }

  async patient(request: PatientRequest, signal: AbortSignal): Promise<PatientBody> {
    return this.endpoints.patient_sim.call(
      {
        method: 'POST',
        path: '/patient',
        body: {
          message: request.message,
          patient_id: request.patient_id,
          ...(request.session_id === null ? {} : { session_id: request.session_id }),
        },
      },
      PatientBodySchema,
      signal,
    );
  }

  async recognizeFaces(
    file: Upload,
    options: { confidenceThreshold?: number | undefined },
    signal: AbortSignal,
  ): Promise<FaceBody> {
    const form = fileForm(file);
    if (options.confidenceThreshold !== undefined) {
      form.append('confidence_threshold', String(options.confidenceThreshold));
    }
    return this.endpoints.face.call(
      { method: 'POST', path: '/recognize_faces', body: form },
      FaceBodySchema,
      signal,
    );
  }

  /** Every sub-service's `/health`, in parallel, each within AGENT_STATUS_TIMEOUT_MS. Never throws. */
  async check(signal: AbortSignal): Promise<SubserviceHealth[]> {
    return Promise.all(SUBSERVICE_IDS.map((id) => this.endpoints[id].health(signal, this.statusTimeoutMs)));
  }
}

/** The clients the agent's app wires in (app.ts). */
export function createSubservices(config: AgentConfig, deps: SubserviceClientsDeps): SubserviceClients {
  return new SubserviceClients(config, deps);
}

/** The upload as the multipart part `file`, with its name and type. */
function fileForm(file: Upload): FormData {
  const form = new FormData();
  form.append(
    'file',
    new Blob([new Uint8Array(file.buffer.buffer, file.buffer.byteOffset, file.buffer.byteLength)], {
      type: file.mimetype,
    }),
    file.filename,
  );
  return form;
}
