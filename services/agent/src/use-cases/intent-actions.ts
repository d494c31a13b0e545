import { BadRequestError, type Logger } from '@clinicalsuite/kit';
import type { Subservices, Upload } from '../domain/subservices.js';
import type { ConcreteIntent, Language } from '../domain/types.js';
import type { ShellPort } from './ports.js';

/**
 * What a message (`/run`, `/run/multipart`, `/ws/chat`) does for an intent that no LLM answers: the
 * code search, speech, the patient simulator and the shell, one function per intent, and the face
 * service for an image. Each reply's text is what the sub-service produced (codes and titles, the
 * patient's words, the command's output), never an LLM's paraphrase; the whole result is in `data`.
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

/** An image's faces, recognised by the face service. */
export type FaceAction = (file: Upload, signal: AbortSignal) => Promise<ActionReply>;

export function intentActions(subs: Subservices, shell: Pick<ShellPort, 'run'>): IntentActions {
  return {
    search_code: async ({ text }, signal) => {
      const found = await subs.search({ query: text, code_types: null, top_k: 10, hybrid: true }, signal);
      const lines = found.results.map((r) => `${r.code} (${r.type}): ${r.title}`);
      return {
        response: lines.length === 0 ? noCodes(text) : lines.join('\n'),
        model: 'codesearch',
        data: found,
      };
    },
    tts: async ({ text, language }, signal) => {
      const audio = await subs.speak({ text, language, speed: 1, format: 'wav' }, signal);
      return { response: text, model: 'tts', data: audio };
    },
    patient_sim: async ({ text, sessionId, patientId }, signal) => {
      if (patientId === undefined) {
        throw new BadRequestError(
          'The patient_sim intent needs `patient_id` (a case of the patient simulator): send it with the message, or use /patient',
          { param: 'patient_id' },
        );
      }
      const reply = await subs.patient(
        { message: text, patient_id: patientId, session_id: sessionId },
        signal,
      );
      return { response: reply.response, model: 'patient_sim', data: reply };
    },
    shell: async ({ text }, signal, log) => {
      const result = await shell.run({ command: text, workdir: null, timeout: 60 }, signal, log);
      const output = [result.stdout, result.stderr].filter((s) => s !== '').join('\n');
      return { response: output, model: 'shell', data: { ...result } };
    },
  };
}

function noCodes(query: string): string {
  return `No code found for "${query.slice(0, 80)}"`;
}

/** The face intent with an image: the face service's recognitions, as text and data. */
export function faceAction(subs: Subservices): FaceAction {
  return async (file, signal) => {
    const body = await subs.recognizeFaces(file, {}, signal);
    const faces = body.data.faces;
    const known = faces.filter((f) => f.recognized).map((f) => f.person_name);
    const response =
      faces.length === 0
        ? 'No face found in the image'
        : `${faces.length} face(s): ${known.length === 0 ? 'none recognised' : `recognised ${known.join(', ')}`}`;
    return { response, model: 'face', data: body.data };
  };
}
