import type { z } from 'zod';
import type {
  AgentCodeType,
  CodeSearchBodySchema,
  FaceBodySchema,
  OcrBodySchema,
  PatientBodySchema,
  SttBodySchema,
  TtsBodySchema,
} from '../schemas/subservices.js';
import type { Language } from './types.js';

/**
 * The sub-services the agent calls over HTTP, as the use cases see them. Implemented in
 * `adapters/subservices/` (one client per service, timeouts, errors that name the sub-service).
 */

export const SUBSERVICE_IDS = ['stt', 'ocr', 'tts', 'codesearch', 'patient_sim', 'face'] as const;
export type SubserviceId = (typeof SUBSERVICE_IDS)[number];

/** An uploaded file as the agent received it. */
export interface Upload {
  readonly buffer: Buffer;
  readonly filename: string;
  readonly mimetype: string;
}

/** The sub-services' answers, as their schemas parse them (unknown fields kept). */
export type SttBody = z.output<typeof SttBodySchema>;
export type OcrBody = z.output<typeof OcrBodySchema>;
export type TtsBody = z.output<typeof TtsBodySchema>;
export type CodeSearchBody = z.output<typeof CodeSearchBodySchema>;
export type PatientBody = z.output<typeof PatientBodySchema>;
export type FaceBody = z.output<typeof FaceBodySchema>;

/** The part of a transcription the agent's own logic reads; `raw` is the sub-service's whole body. */
export interface TranscriptionResult {
  readonly text: string;
  readonly language: string;
  readonly raw: SttBody;
}

export interface OcrResult {
  readonly text: string;
  readonly raw: OcrBody;
}

export interface SpeakRequest {
  readonly text: string;
  readonly language: Language;
  readonly speed: number;
  readonly format: 'wav' | 'mp3';
}

export interface SearchRequest {
  readonly query: string;
  readonly code_types: readonly AgentCodeType[] | null;
  readonly top_k: number;
  readonly hybrid: boolean;
}

export interface PatientRequest {
  readonly message: string;
  readonly patient_id: string;
  readonly session_id: string | null;
}

export interface Subservices {
  transcribe(file: Upload, language: Language, signal: AbortSignal): Promise<TranscriptionResult>;
  ocr(file: Upload, signal: AbortSignal): Promise<OcrResult>;
  /** The audio as base64 with its format, rate and duration. */
  speak(request: SpeakRequest, signal: AbortSignal): Promise<TtsBody>;
  search(request: SearchRequest, signal: AbortSignal): Promise<CodeSearchBody>;
  patient(request: PatientRequest, signal: AbortSignal): Promise<PatientBody>;
  recognizeFaces(
    file: Upload,
    options: { confidenceThreshold?: number | undefined },
    signal: AbortSignal,
  ): Promise<FaceBody>;
  /** Throws the 503 naming the sub-service's `<NAME>_URL` when it is not configured. */
  ensureConfigured(id: SubserviceId): void;
}

/** A sub-service's health as the agent's status reports it. */
export type HealthState = 'up' | 'not_ready' | 'down' | 'not_configured';

export interface SubserviceHealth {
  readonly id: SubserviceId;
  readonly name: string;
  /** The base URL without credentials, or null when not configured. */
  readonly url: string | null;
  readonly state: HealthState;
  /** Milliseconds the check took (null when not configured). */
  readonly latency_ms: number | null;
  /** Why it is not up (its own reason when it gave one); null when up. */
  readonly detail: string | null;
}
