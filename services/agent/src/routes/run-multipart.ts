import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  UnsupportedMediaTypeError,
  defineRoute,
  formOptional,
  multipart,
  uploadedFiles,
  type AnyRoute,
  type UploadedFile,
} from '@clinicalsuite/kit';
import { z } from 'zod';
import type { Subservices, Upload } from '../domain/subservices.js';
import { INTENTS, type ConcreteIntent } from '../domain/types.js';
import { LanguageSchema, SessionIdSchema, TurnResponseSchema } from '../schemas/api.js';
import type { IntentActions } from './actions.js';
import { checkLength, decideIntent, dispatch, runnableIntent, type DispatchInput } from './conversation.js';
import type { AgentRuntime } from './runtime.js';
import { recordTurn } from './turns.js';

/**
 * `POST /run/multipart`: `/run` with a file. An `audio` file (WAV or MP3) is transcribed and an
 * `image` (JPG or PNG) read by OCR first; the text found joins the message. Then the intent decides:
 * `transcribe` or `ocr` (detected for a file with no message, or forced) answer with the text found;
 * `face_recognize` sends the image to the face service; anything else (analyze, summarize, translate,
 * chat...) runs on the message and the text found together. The response says what was extracted.
 */

const AUDIO_TYPES = new Set([
  'audio/wav',
  'audio/x-wav',
  'audio/wave',
  'audio/vnd.wave',
  'audio/mpeg',
  'audio/mp3',
]);
const AUDIO_EXT = /\.(wav|mp3)$/i;
const IMAGE_TYPES = new Set(['image/jpeg', 'image/jpg', 'image/png']);
const IMAGE_EXT = /\.(jpe?g|png)$/i;

const FieldsSchema = z.object({
  message: z.string().default(''),
  // An empty optional field (an HTML form sends the ones left blank) is absent.
  session_id: formOptional(SessionIdSchema.optional()),
  language: formOptional(LanguageSchema.default('vi')),
  force_intent: formOptional(z.enum(INTENTS).optional()),
  audio: z.any().optional().describe('Audio file (WAV or MP3)'),
  image: z.any().optional().describe('Image file (JPG or PNG)'),
});

export interface FaceAction {
  (
    file: Upload,
    signal: AbortSignal,
  ): Promise<{ response: string; model: string; data: Record<string, unknown> }>;
}

export function runMultipartRoute(
  rt: AgentRuntime,
  subs: Subservices,
  actions: IntentActions,
  face: FaceAction,
): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/run/multipart',
    summary: 'Run a message with an audio or image file: transcribe or OCR it, then answer',
    description:
      'Fields `message`, `session_id`, `language`, `force_intent`; files `audio` (WAV or MP3) and ' +
      '`image` (JPG or PNG). The response adds `data.transcript` or `data.ocr_text`.',
    tags: ['agent'],
    body: FieldsSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: multipart({
      files: [
        { name: 'audio', maxCount: 1 },
        { name: 'image', maxCount: 1 },
      ],
      maxFileBytes: rt.config.AGENT_UPLOAD_MAX_BYTES,
    }),
    response: TurnResponseSchema,
    responses: {
      400: { description: 'No message and no file' },
      413: { description: 'A file over AGENT_UPLOAD_MAX_BYTES' },
      415: { description: 'Not WAV/MP3 audio or JPG/PNG image' },
      502: { description: 'A sub-service or every LLM failed' },
      503: { description: 'The sub-service needed is not configured' },
    },
    // The files and the message are checked first: a malformed request is refused while not ready too.
    requiresReady: 'in-handler',
    handler: async ({ body, req, signal, log, receivedAt, requireReady }) => {
      const audio = single(uploadedFiles(req, 'audio'), 'audio', AUDIO_TYPES, AUDIO_EXT, 'WAV or MP3 audio');
      const image = single(
        uploadedFiles(req, 'image'),
        'image',
        IMAGE_TYPES,
        IMAGE_EXT,
        'a JPG or PNG image',
      );
      const message = body.message.trim();
      if (message === '' && audio === undefined && image === undefined)
        throw new BadRequestError('Send a `message`, an `audio` file or an `image` file', {
          param: 'message',
        });
      checkLength(rt, message);
      requireReady();
      const sessionId = body.session_id ?? null;
      // The session as this turn found it: one deleted while the file is read stays deleted.
      const started = sessionId === null ? undefined : rt.sessions.peek(sessionId, rt.now());
      const hints = { audio: audio !== undefined, image: image !== undefined };
      const decision = runnableIntent(
        await decideIntent(
          rt,
          {
            text: message,
            language: body.language,
            sessionId,
            force: body.force_intent ?? null,
            prefer: null,
            hints,
          },
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
      if (intent === 'face_recognize') {
        if (image === undefined)
          throw new BadRequestError('The face_recognize intent needs an `image` file', { param: 'image' });
        const reply = await face(image, signal);
        rt.metrics.intents.inc({ intent, source: decision.source });
        return finish(reply.response, intent, reply.model, reply.data);
      }
      const extracted: Record<string, unknown> = {};
      const texts: string[] = [];
      if (audio !== undefined) {
        const t = await subs.transcribe(audio, body.language, signal);
        extracted['transcript'] = t.text;
        extracted['transcription'] = t.raw;
        texts.push(t.text);
      }
      if (image !== undefined) {
        const o = await subs.ocr(image, signal);
        extracted['ocr_text'] = o.text;
        extracted['ocr'] = o.raw;
        texts.push(o.text);
      }
      const found = texts.join('\n\n').trim();
      if (intent === 'transcribe' || intent === 'ocr') {
        rt.metrics.intents.inc({ intent, source: decision.source });
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
      checkLength(rt, combined);
      const input: DispatchInput = {
        text: combined,
        language: body.language,
        sessionId,
        force: null,
        prefer: null,
        instruction: message,
        // The session as the turn found it before the file was read: one deleted meanwhile is not
        // opened again by the reply.
        started: { session: started },
      };
      const reply = await dispatch(rt, actions, input, decision, signal, log, receivedAt);
      return { ...reply, data: { ...extracted, ...(reply.data ?? {}) } };

      function finish(response: string, done: ConcreteIntent, model: string, data: Record<string, unknown>) {
        const session = recordTurn(
          rt,
          sessionId ?? rt.newSessionId(),
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
          processing_time_ms: Math.round(performance.now() - receivedAt),
          intent_source: decision.source,
          fell_back_from: [],
          finish_reason: null,
          usage: null,
          history_trimmed: 0,
          data,
        };
      }
    },
  });
}

function single(
  files: UploadedFile[],
  field: string,
  types: ReadonlySet<string>,
  ext: RegExp,
  what: string,
): Upload | undefined {
  const file = files[0];
  if (file?.buffer === undefined) return undefined;
  if (!types.has(file.mimetype.toLowerCase()) && !ext.test(file.originalname)) {
    throw new UnsupportedMediaTypeError(`The \`${field}\` file must be ${what} (got ${file.mimetype})`, {
      param: field,
    });
  }
  return { buffer: file.buffer, filename: file.originalname, mimetype: file.mimetype };
}
