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
import { checkMessageLength } from '../domain/messages.js';
import type { Upload } from '../domain/subservices.js';
import { INTENTS } from '../domain/types.js';
import { LanguageSchema, SessionIdSchema, TurnResponseSchema } from '../schemas/api.js';
import type { RoutesContext } from './context.js';

/**
 * `POST /run/multipart`: `/run` with a file, an `audio` file (WAV or MP3) or an `image` (JPG or
 * PNG); what is done with it is the use case's (use-cases/message-with-file.ts). The response says
 * what was extracted.
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

export function runMultipartRoute(ctx: RoutesContext): AnyRoute {
  const { config, useCases } = ctx;
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
      maxFileBytes: config.AGENT_UPLOAD_MAX_BYTES,
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
      checkMessageLength(message, config.AGENT_MAX_MESSAGE_CHARS);
      requireReady();
      return useCases.messageWithFile(
        {
          message,
          language: body.language,
          sessionId: body.session_id ?? null,
          force: body.force_intent ?? null,
          audio,
          image,
        },
        { signal, log, since: receivedAt },
      );
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
