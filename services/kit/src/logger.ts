import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/**
 * Keys whose values are clinical data or secrets. Whatever object a log call carries, these are
 * replaced, at the top level and one level down (deeper paths cost every log call a traversal; a
 * nested body is caught by its parent key, `body`, `messages` …): prompts, messages, images, embeddings,
 * patient text, transcripts, tokens, passwords, cookies.
 */
export const REDACTED_KEYS = [
  'authorization',
  'cookie',
  'set-cookie',
  'password',
  'token',
  'api_key',
  'apiKey',
  'prompt',
  'messages',
  'content',
  'text',
  'system',
  'image',
  'images',
  'image_url',
  'audio',
  'file',
  'files',
  'embedding',
  'embeddings',
  'encoding',
  'patient',
  'patient_text',
  'transcript',
  'query',
  'body',
] as const;

const REDACT_PATHS = REDACTED_KEYS.flatMap((k) => {
  const key = /^[A-Za-z_$][\w$]*$/.test(k) ? `.${k}` : `["${k}"]`;
  return [key.slice(key.startsWith('.') ? 1 : 0), `*${key}`];
});

export interface LoggerSettings {
  readonly service: string;
  readonly level: string;
  readonly destination?: DestinationStream;
}

export function createLogger(settings: LoggerSettings): Logger {
  const options: LoggerOptions = {
    level: settings.level,
    base: { service: settings.service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
  };
  return settings.destination ? pino(options, settings.destination) : pino(options);
}

/**
 * The URL as it may be logged: the path, and the names of query parameters without their values
 * (a WebSocket token or a search query can travel there).
 */
export function loggableUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const names = [...new URLSearchParams(url.slice(q + 1)).keys()];
  return names.length === 0 ? url.slice(0, q) : `${url.slice(0, q)}?${names.map((n) => `${n}=…`).join('&')}`;
}
