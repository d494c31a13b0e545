import { BadRequestError } from '@clinicalsuite/kit';
import type { Shell } from '../adapters/shell/index.js';
import type { SubserviceClients } from '../adapters/subservices/index.js';
import type { Upload } from '../domain/subservices.js';
import type { IntentActions } from './actions.js';
import type { FaceAction } from './run-multipart.js';

/**
 * `/run`'s answers for the intents no LLM answers: the code search, speech, the patient simulator
 * and the shell. Each reply's text is what the sub-service produced (codes and titles, the patient's
 * words, the command's output), never an LLM's paraphrase; the whole result is in `data`.
 */
export function buildIntentActions(subs: SubserviceClients, shell: Shell): IntentActions {
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

/** `/run/multipart` with the face intent: the face service's recognitions, as text and data. */
export function faceAction(subs: SubserviceClients): FaceAction {
  return async (file: Upload, signal: AbortSignal) => {
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
