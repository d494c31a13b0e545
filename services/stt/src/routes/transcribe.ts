import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  childLimits,
  InternalError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  UnsupportedMediaTypeError,
  ValidationError,
  defineRoute,
  multipart,
  uploadedFiles,
  type AnyRoute,
} from '@clinicalsuite/kit';
import { ACCEPTED_FORMATS, decodeToPcm, probeAudio } from '../adapters/audio.js';
import { EngineError } from '../adapters/backend.js';
import { routeRequest } from '../domain/routing.js';
import { joinSegments, pcmSeconds } from '../domain/transcript.js';
import type { Segment } from '../domain/types.js';
import type { Rejection } from '../metrics.js';
import { TranscriptionSchema, transcribeFormSchema, type Transcription } from '../schemas/stt.js';
import { backendStatuses, type SttRuntime } from './runtime.js';

const round = (x: number, digits = 3): number => Number(x.toFixed(digits));

export function transcribeRoute(rt: SttRuntime): AnyRoute {
  const c = rt.config;
  const accepted = Object.values(ACCEPTED_FORMATS).join(', ');
  return defineRoute({
    method: 'post',
    path: '/transcribe',
    summary: 'Transcribe speech: an audio file in, the text with timed segments out',
    description:
      `multipart/form-data: \`file\` (${accepted}; at most ${String(Math.round(c.STT_MAX_AUDIO_BYTES / 1024 / 1024))} MB ` +
      `and ${String(c.STT_MAX_AUDIO_SECONDS)} s), \`language\` (\`vi\` or \`en\`, default \`${c.STT_DEFAULT_LANGUAGE}\`), ` +
      '`backend` (`auto`, `pocketsphinx`, `whisper`). Audio is decoded to 16 kHz mono by ffmpeg. English is ' +
      'transcribed by pocketsphinx, or by a Whisper model when one is loaded; Vietnamese needs a multilingual ' +
      'Whisper model (422 naming it otherwise). 413: file or audio too long; 415: not audio or not an accepted format.',
    tags: ['speech'],
    body: transcribeFormSchema(c.STT_DEFAULT_LANGUAGE),
    bodyContentType: 'multipart/form-data',
    bodyParser: multipart({ files: [{ name: 'file', maxCount: 1 }], maxFileBytes: c.STT_MAX_AUDIO_BYTES }),
    response: TranscriptionSchema,
    responses: {
      413: { description: 'The file is over STT_MAX_AUDIO_BYTES or the audio over STT_MAX_AUDIO_SECONDS' },
      415: { description: 'Not audio, or not WAV/MP3/OGG/FLAC/WebM' },
      422: {
        description: 'A field is invalid, the file is missing, or no loaded model transcribes the language',
      },
      503: { description: 'The backend for the language is still loading or failed (the reason says which)' },
    },
    // Routing answers for the language: 422 when nothing here knows it, 503 while its backend loads.
    requiresReady: false,
    timeoutMs: c.REQUEST_TIMEOUT_MS,
    handler: async ({ body, req, signal, log }): Promise<Transcription> => {
      const reject = (reason: Rejection, error: Error): never => {
        rt.metrics.rejections.inc({ reason });
        throw error;
      };
      const file = uploadedFiles(req, 'file')[0];
      if (file?.buffer === undefined) {
        return reject(
          'empty',
          new ValidationError([
            {
              loc: ['body', 'file'],
              msg: 'an audio file is required in the form field `file`',
              type: 'missing',
            },
          ]),
        );
      }
      if (file.size === 0) {
        return reject(
          'empty',
          new BadRequestError('The audio file is empty', { code: 'empty_file', param: 'file' }),
        );
      }
      const route = routeRequest(body.language, body.backend, backendStatuses(rt));
      if (!route.ok && route.kind === 'unsupported') {
        return reject(
          'language_unavailable',
          new ValidationError([{ loc: ['body', route.field], msg: route.message, type: 'unsupported' }]),
        );
      }

      const started = performance.now();
      const tools = {
        ffmpeg: c.FFMPEG_PATH,
        ffprobe: c.FFPROBE_PATH,
        timeoutMs: c.STT_DECODE_TIMEOUT_MS,
        limits: childLimits(c),
      };
      const refuseAudio = (error: unknown): never => {
        if (error instanceof PayloadTooLargeError) return reject('too_long', error);
        if (error instanceof UnsupportedMediaTypeError) return reject('not_audio', error);
        throw error;
      };
      // The file is probed (415 not audio, 413 too long) before the backend's readiness (503), so
      // a malformed request gets its 4xx while a model loads too.
      try {
        const info = await probeAudio(tools, file.buffer, signal);
        if (info.declaredSeconds !== null && info.declaredSeconds > c.STT_MAX_AUDIO_SECONDS + 1) {
          throw new PayloadTooLargeError(
            `The audio lasts ${info.declaredSeconds.toFixed(1)} s; at most ${String(c.STT_MAX_AUDIO_SECONDS)} s are ` +
              'accepted (STT_MAX_AUDIO_SECONDS); split it into shorter files',
            { param: 'file' },
          );
        }
      } catch (error) {
        return refuseAudio(error);
      }
      if (!route.ok) return reject('not_ready', new ServiceUnavailableError(`Not ready: ${route.message}`));
      const backend = rt.backends.get(route.backend);
      if (backend === undefined) throw new InternalError(`backend ${route.backend} is missing`);
      let pcm: Buffer;
      try {
        pcm = await decodeToPcm(tools, file.buffer, c.STT_MAX_AUDIO_SECONDS, signal);
      } catch (error) {
        return refuseAudio(error);
      }
      const decodedAt = performance.now();
      rt.metrics.stage.observe({ stage: 'decode', backend: route.backend }, (decodedAt - started) / 1000);
      const duration = pcmSeconds(pcm.length);

      let segments: readonly Segment[];
      let engineLanguage: string | null = null;
      try {
        const recognition = await backend.transcribe(pcm, { language: body.language, signal });
        segments = recognition.segments;
        engineLanguage = recognition.engineLanguage ?? null;
      } catch (error) {
        if (signal.aborted) throw error;
        rt.metrics.engineFailures.inc({ backend: route.backend });
        if (error instanceof EngineError) {
          // The engine's own words stay in the log (at error, without the audio or any transcript).
          log.error({ backend: route.backend, detail: error.detail }, error.message);
          throw new InternalError(`Speech recognition failed: ${error.message}`);
        }
        throw error;
      }
      const finished = performance.now();
      rt.metrics.stage.observe({ stage: 'recognize', backend: route.backend }, (finished - decodedAt) / 1000);
      rt.metrics.audioSeconds.observe({ backend: route.backend }, duration);
      rt.metrics.transcriptions.inc({ backend: route.backend, language: body.language });
      const elapsed = round(finished - started, 1);
      rt.stats.record(elapsed);
      const status = backend.status();
      // Counts and timings only: never the transcript.
      log.info(
        {
          backend: route.backend,
          language: body.language,
          audioSeconds: round(duration, 2),
          segments: segments.length,
          ms: elapsed,
        },
        'transcribed',
      );
      return {
        text: joinSegments(segments),
        language: body.language,
        backend: route.backend,
        engine: status.engine,
        model: status.model ?? 'unknown',
        duration_seconds: round(duration),
        segments: segments.map((s) => ({ ...s })),
        engine_language: engineLanguage,
        processing_time_ms: elapsed,
      };
    },
  });
}
