import { defineRoute, jsonBody, type AnyRoute } from '@clinicalsuite/kit';
import {
  MIME_TYPES,
  TtsBase64ResponseSchema,
  ttsRequestSchema,
  type TtsBase64Response,
} from '../schemas/tts.js';
import { speak, type TtsRuntime } from './runtime.js';

/** POST /tts: JSON in; audio bytes, or JSON with the audio in base64, out. */

const AUDIO_HEADERS_DOC =
  'Headers: `X-Audio-Duration-Seconds`, `X-Audio-Sample-Rate`, `X-TTS-Engine` (espeak-ng or piper), ' +
  '`X-TTS-Voice`, `X-TTS-Language`, `Content-Length`.';

export function ttsRoute(rt: TtsRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/tts',
    summary: 'Speak a text: WAV or MP3, as audio bytes or as base64 JSON',
    description:
      "Vietnamese or English text in; speech out, from the language's Piper neural voice when one is " +
      'installed, else espeak-ng (the response says which engine spoke). With `response_format: "base64"` ' +
      '(or an Accept header that prefers application/json) the answer is JSON with `audio_base64`; ' +
      `otherwise the audio itself (audio/wav or audio/mpeg). ${AUDIO_HEADERS_DOC} ` +
      'Errors: 413 body over BODY_LIMIT; 415 not JSON; 422 text empty or longer than TTS_MAX_CHARS, unknown ' +
      'language, speed outside 0.5..2.0, unknown format, or engine "piper" where the language has no Piper ' +
      'voice; 503 not ready (espeak-ng missing, voices loading: the reason is given) or MP3 without ffmpeg; ' +
      '504 the synthesis ran past the deadline.',
    tags: ['tts'],
    body: ttsRequestSchema(rt.config.TTS_MAX_CHARS),
    response: TtsBase64ResponseSchema,
    bodyParser: jsonBody({ limit: rt.config.BODY_LIMIT, message: 'Send the request as application/json' }),
    responses: { 415: { description: 'The body is not application/json' } },
    handler: async ({ body, req, res, signal, log, admittedAt }) => {
      const speech = await speak(rt, body, signal, log);
      const asJson =
        body.response_format === 'base64' ||
        (body.response_format === undefined &&
          req.accepts([MIME_TYPES[body.format], 'application/json']) === 'application/json');
      res.setHeader('cache-control', 'no-store');
      if (asJson) {
        const answer: TtsBase64Response = {
          audio_base64: speech.bytes.toString('base64'),
          format: speech.format,
          mime_type: speech.mimeType,
          sample_rate: speech.sampleRate,
          duration_seconds: speech.durationSeconds,
          size_bytes: speech.bytes.length,
          engine: speech.engine,
          voice: speech.voice,
          language: speech.language,
          speed: body.speed,
          characters: speech.characters,
          processing_time_ms: Math.round((performance.now() - admittedAt) * 100) / 100,
        };
        return answer;
      }
      res.status(200);
      res.setHeader('content-type', speech.mimeType);
      res.setHeader('content-length', String(speech.bytes.length));
      res.setHeader('content-disposition', `inline; filename="speech.${speech.format}"`);
      res.setHeader('x-audio-duration-seconds', String(speech.durationSeconds));
      res.setHeader('x-audio-sample-rate', String(speech.sampleRate));
      res.setHeader('x-tts-engine', speech.engine);
      res.setHeader('x-tts-voice', speech.voice);
      res.setHeader('x-tts-language', speech.language);
      res.end(speech.bytes);
      return undefined;
    },
  });
}

/** POST /tts answers audio bytes as well as JSON: both are documented on its 200. */
export function documentAudioResponse(openapi: Record<string, unknown>): void {
  const paths = openapi['paths'] as Record<string, Record<string, { responses?: Record<string, unknown> }>>;
  const ok = paths['/tts']?.['post']?.responses?.['200'] as { content?: Record<string, unknown> } | undefined;
  if (ok === undefined) return;
  const binary = { schema: { type: 'string', format: 'binary' } };
  ok.content = { ...ok.content, 'audio/wav': binary, 'audio/mpeg': binary };
}
