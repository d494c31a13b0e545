import { defineRoute, healthRoute, type AnyRoute } from '@clinicalsuite/kit';
import { HealthSchema, RootSchema } from '../schemas/api.js';
import type { RoutesContext } from './context.js';

/** `/` and `/health`, both without a token (spec, Authentication); the API's title and description. */

export const API_INFO = {
  title: 'ClinicalSuite agent orchestrator',
  description:
    'Detects the intent of a message and routes it to one of three LLMs (alpha4_service, beta3_service, ' +
    'beta_service) or to a sub-service (speech to text, OCR, text to speech, medical code search, face ' +
    'recognition, patient simulator); in-memory sessions, SSE and WebSocket streaming, pipelines, and a ' +
    'guarded shell. Every endpoint but /, /health and /capabilities needs a bearer token with the ' +
    '`ai_agent` scope.',
} as const;

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /run': 'Detect (or force) the intent of a message and answer it; SSE with stream: true',
  'POST /run/multipart': 'Like /run with an audio or image file',
  'POST /chat': 'Chat (intent chat); SSE with stream: true',
  'POST /chat/raw': 'Messages straight to an LLM, system prompt override',
  'POST /v1/chat/completions': 'OpenAI-compatible chat completions across the three LLMs',
  'GET /v1/models': 'The three LLM identifiers',
  'POST /analyze': 'Clinical analysis of symptoms (intent analyze)',
  'POST /translate': 'Translate a text',
  'POST /summarize': 'Summarise a text',
  'POST /code': 'Write code (beta3_service); SSE with stream: true',
  'POST /debug': 'Debug code and an error (beta3_service); SSE with stream: true',
  'POST /transcribe': 'Speech to text (optionally analysed)',
  'POST /ocr': 'Text from an image (optionally analysed, and searched for medical codes)',
  'POST /face': 'Recognise the faces in an image',
  'POST /tts': 'Text to speech (base64 audio)',
  'POST /search': 'Search medical codes',
  'POST /patient': 'Talk to a simulated patient',
  'POST /shell': 'Run an allowlisted command (off unless SHELL_EXEC_ENABLED)',
  'POST /pipeline/audio-to-diagnosis': 'Speech to text, then symptom analysis',
  'POST /pipeline/audio-full-consult': 'Speech to text, consultation, then speech',
  'POST /pipeline/image-to-codes': 'OCR, then ICD-10/ICPC-2 codes from the code search',
  'POST /pipeline/image-full-analysis': 'OCR, then a detailed analysis',
  'GET /sessions': 'Active sessions',
  'GET /sessions/{session_id}': 'A session with its messages',
  'DELETE /sessions/{session_id}': 'Delete a session',
  'WS /ws/chat': 'Streaming chat over WebSocket',
  'GET /status': 'Every sub-service and LLM, checked now',
  'GET /capabilities': 'The sub-services: id, name, description, tags, GPU',
  'GET /gpu': 'GPU temperature, utilization and memory',
  'GET /health': 'Health: 200 when ready, 503 with the reason otherwise',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation',
};

export function rootRoute({ config, version, readiness }: RoutesContext): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information: version, port, status, documentation',
    tags: ['info'],
    auth: false,
    response: RootSchema,
    handler: ({ req }) => ({
      service: 'ai_agent' as const,
      version,
      port: req.socket.localPort ?? config.PORT,
      status: readiness.ready ? ('ready' as const) : ('not_ready' as const),
      docs: '/docs',
      openapi: '/openapi.json',
      endpoints: ENDPOINTS,
    }),
  });
}

export function agentHealthRoute({ config, version, readiness, useCases }: RoutesContext): AnyRoute {
  return healthRoute({
    readiness,
    schema: HealthSchema,
    auth: false,
    body: (ready, reason, req) => ({
      status: ready ? ('healthy' as const) : ('unhealthy' as const),
      service: 'ai_agent' as const,
      port: req.socket.localPort ?? config.PORT,
      version,
      llms: useCases.status.llmStates(),
      ...(ready || reason === undefined ? {} : { reason }),
    }),
  });
}
