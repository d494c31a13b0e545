import { performance } from 'node:perf_hooks';
import { BadRequestError } from '@clinicalsuite/kit';
import { checkMessageLength } from '../domain/messages.js';
import type { Subservices, Upload } from '../domain/subservices.js';
import type { ConcreteIntent, Intent, Language } from '../domain/types.js';
import type { FaceAction } from './intent-actions.js';
import { answerDecided, decideIntent, runnableIntent, type MessageDeps } from './message.js';
import type { Call } from './ports.js';
import { recordTurn, type TurnReply } from './turn.js';

/**
 * A message with a file (`/run/multipart`): an `audio` file is transcribed and an `image` read by
 * OCR first, and the text found joins the message. Then the intent decides: `transcribe` or `ocr`
 * (detected for a file with no message, or forced) answer with the text found; `face_recognize`
 * sends the image to the face service; anything else (analyze, summarize, translate, chat...) runs
 * on the message and the text found together. The reply's data says what was extracted.
 */

export type MessageWithFileDeps = MessageDeps & {
  readonly subservices: Pick<Subservices, 'transcribe' | 'ocr'>;
  readonly face: FaceAction;
};

export interface MessageWithFileInput {
  /** The message, trimmed (may be empty when a file came). */
  readonly message: string;
  readonly language: Language;
  readonly sessionId: string | null;
  readonly force: Intent | null;
  readonly audio?: Upload | undefined;
  readonly image?: Upload | undefined;
}

export function messageWithFileUseCase(deps: MessageWithFileDeps) {
  return async (input: MessageWithFileInput, call: Call): Promise<TurnReply> => {
    const { message, audio, image, sessionId, language } = input;
    const { signal } = call;
    // The session as this turn found it: one deleted while the file is read stays deleted.
    const started = sessionId === null ? undefined : deps.sessions.peek(sessionId, deps.now());
    const hints = { audio: audio !== undefined, image: image !== undefined };
    const decision = runnableIntent(
      await decideIntent(
        deps,
        { text: message, language, sessionId, force: input.force, prefer: null, hints },
        signal,
      ),
      { file: audio !== undefined || image !== undefined, patient: false },
    );
    const intent: ConcreteIntent = decision.intent;
    const wrongFile =
      (intent === 'transcribe' && audio === undefined) || (intent === 'ocr' && image === undefined);
    if (wrongFile && decision.source === 'forced') {
      throw new BadRequestError(
        `The ${intent} intent needs ${intent === 'transcribe' ? 'an `audio`' : 'an `image`'} file`,
        { param: intent === 'transcribe' ? 'audio' : 'image' },
      );
    }
    const finish = (
      response: string,
      done: ConcreteIntent,
      model: string,
      data: Record<string, unknown>,
    ): TurnReply => {
      const session = recordTurn(
        deps,
        sessionId ?? deps.newSessionId(),
        message === '' ? `[${done}]` : message,
        response,
        done,
        model,
        started,
      );
      return {
        response,
        intent: done,
        model,
        ...session,
        processing_time_ms: Math.round(performance.now() - call.since),
        intent_source: decision.source,
        fell_back_from: [],
        finish_reason: null,
        usage: null,
        history_trimmed: 0,
        data,
      };
    };
    if (intent === 'face_recognize') {
      if (image === undefined)
        throw new BadRequestError('The face_recognize intent needs an `image` file', { param: 'image' });
      const reply = await deps.face(image, signal);
      deps.metrics.intents.inc({ intent, source: decision.source });
      return finish(reply.response, intent, reply.model, reply.data);
    }
    const extracted: Record<string, unknown> = {};
    const texts: string[] = [];
    if (audio !== undefined) {
      const t = await deps.subservices.transcribe(audio, language, signal);
      extracted['transcript'] = t.text;
      extracted['transcription'] = t.raw;
      texts.push(t.text);
    }
    if (image !== undefined) {
      const o = await deps.subservices.ocr(image, signal);
      extracted['ocr_text'] = o.text;
      extracted['ocr'] = o.raw;
      texts.push(o.text);
    }
    const found = texts.join('\n\n').trim();
    if (intent === 'transcribe' || intent === 'ocr') {
      deps.metrics.intents.inc({ intent, source: decision.source });
      // Detected from the file alone: the file's kind names what ran.
      const done: ConcreteIntent = audio !== undefined && image === undefined ? 'transcribe' : intent;
      const label: ConcreteIntent = image !== undefined && audio === undefined ? 'ocr' : done;
      return finish(found, label, label === 'transcribe' ? 'stt' : 'ocr', extracted);
    }
    const combined = [message, found].filter((t) => t !== '').join('\n\n');
    if (combined === '')
      throw new BadRequestError('Nothing was recognised in the file, and there is no message to answer', {
        param: audio !== undefined ? 'audio' : 'image',
      });
    checkMessageLength(combined, deps.config.AGENT_MAX_MESSAGE_CHARS);
    const reply = await answerDecided(
      deps,
      {
        text: combined,
        language,
        sessionId,
        force: null,
        prefer: null,
        instruction: message,
        // The session as the turn found it before the file was read: one deleted meanwhile is not
        // opened again by the reply.
        started: { session: started },
      },
      decision,
      call,
    );
    return { ...reply, data: { ...extracted, ...(reply.data ?? {}) } };
  };
}
