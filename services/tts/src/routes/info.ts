import { defineRoute, healthRoute, type AnyRoute } from '@clinicalsuite/kit';
import { summarizeGpu } from '@clinicalsuite/kit/gpu';
import { LANGUAGES } from '../domain/language.js';
import { chooseEngine } from '../domain/synthesis.js';
import {
  AUDIO_FORMATS,
  HealthResponseSchema,
  RootResponseSchema,
  StatusResponseSchema,
  type StatusResponse,
} from '../schemas/tts.js';
import type { TtsRuntime } from './runtime.js';

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /tts':
    'Speak a text (text, language vi|en, speed, format wav|mp3, response_format audio|base64, engine)',
  'GET /health': 'Health: 200 when espeak-ng answers and the voices are loaded, 503 with the reason',
  'GET /status': 'Engines, Piper voices, MP3 availability, concurrency, totals',
  'GET /gpu_status': 'GPU status (this service runs on CPU)',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation (OpenAPI at /openapi.json)',
};

export function rootRoute(rt: TtsRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information: version, port, status, languages, endpoints',
    tags: ['info'],
    response: RootResponseSchema,
    handler: () => ({
      service: 'tts' as const,
      title: 'Text to speech',
      version: rt.version,
      port: rt.config.PORT,
      status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
      reason: rt.readiness.reason ?? null,
      docs: '/docs',
      openapi: '/openapi.json',
      languages: [...LANGUAGES],
      formats: [...AUDIO_FORMATS],
      max_characters: rt.config.TTS_MAX_CHARS,
      endpoints: ENDPOINTS,
    }),
  });
}

export function ttsHealthRoute(rt: TtsRuntime): AnyRoute {
  return healthRoute({
    readiness: rt.readiness,
    schema: HealthResponseSchema,
    body: (ready, reason) => ({
      status: ready ? ('healthy' as const) : ('unhealthy' as const),
      service: 'tts' as const,
      version: rt.version,
      ...(ready ? {} : { reason: reason ?? 'starting' }),
    }),
  });
}

export function statusRoute(rt: TtsRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Engines (espeak-ng, Piper voices, MP3), concurrency and totals',
    tags: ['info'],
    response: StatusResponseSchema,
    handler: async (): Promise<StatusResponse> => {
      const { engines } = rt;
      const espeakOnly = rt.config.TTS_ENGINE === 'espeak';
      const defaults = Object.fromEntries(
        LANGUAGES.map((language) => {
          const d = chooseEngine(language, 'auto', engines.voices, espeakOnly);
          return [language, d.engine === 'piper' ? 'piper' : 'espeak-ng'];
        }),
      ) as StatusResponse['engines']['default_engine'];
      return {
        service: 'tts',
        version: rt.version,
        status: rt.readiness.ready ? 'ready' : 'not_ready',
        reason: rt.readiness.reason ?? null,
        engines: {
          espeak_ng: {
            available: engines.espeakVersion !== undefined,
            version: engines.espeakVersion ?? null,
          },
          piper: {
            voices: [...engines.voices].map(([language, v]) => ({
              language,
              voice: v.id,
              sample_rate: v.sampleRate,
            })),
            problems: [...engines.problems],
          },
          mp3: { available: engines.mp3Unavailable === undefined, reason: engines.mp3Unavailable ?? null },
          default_engine: defaults,
        },
        concurrency: { limit: rt.gate.limit, running: rt.gate.running, waiting: rt.gate.waiting },
        syntheses: {
          total: rt.stats.total,
          audio_seconds: Math.round(rt.stats.audioSeconds * 1000) / 1000,
          average_processing_ms: rt.stats.averageMs,
        },
        uptime_seconds: Math.max(0, Math.round((performance.now() - rt.startedAt) / 1000)),
        gpu: summarizeGpu(await rt.gpu.read()),
      };
    },
  });
}
