import type { Language } from './types.js';

/**
 * The sub-services the agent calls over HTTP, as the routes and pipelines see them. Implemented in
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

/** The part of a transcription the agent's own logic reads; `raw` is the sub-service's whole body. */
export interface TranscriptionResult {
  readonly text: string;
  readonly language: string;
  readonly raw: Record<string, unknown>;
}

export interface OcrResult {
  readonly text: string;
  readonly raw: Record<string, unknown>;
}

export interface Subservices {
  transcribe(file: Upload, language: Language, signal: AbortSignal): Promise<TranscriptionResult>;
  ocr(file: Upload, signal: AbortSignal): Promise<OcrResult>;
}
