import type { Logger } from '@clinicalsuite/kit';
import type { ConcreteIntent, Language } from '../domain/types.js';

/**
 * What `/run`, `/run/multipart` and `/ws/chat` do for an intent that no LLM answers (code search,
 * speech, the patient simulator, the shell): one function per intent, wired in app.ts onto the
 * sub-service clients and the shell.
 */

export interface ActionInput {
  readonly text: string;
  readonly language: Language;
  readonly sessionId: string | null;
  readonly patientId?: string | undefined;
}

export interface ActionReply {
  /** The text reply (recorded in the session). */
  readonly response: string;
  /** What produced it: a sub-service id or `shell`. */
  readonly model: string;
  /** The sub-service's structured result. */
  readonly data: Record<string, unknown>;
}

export type IntentAction = (input: ActionInput, signal: AbortSignal, log: Logger) => Promise<ActionReply>;

export type IntentActions = Partial<Record<ConcreteIntent, IntentAction>>;

/** Intents that need a file: through /run they are answered as chat unless forced (then 400). */
export const FILE_INTENTS: ReadonlySet<ConcreteIntent> = new Set<ConcreteIntent>([
  'transcribe',
  'ocr',
  'face_recognize',
]);
