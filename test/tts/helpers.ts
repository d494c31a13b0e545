import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildTtsApp, type TtsService } from '../../services/tts/src/app.js';
import { loadTtsConfig } from '../../services/tts/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

export const run = promisify(execFile);

export interface TtsTestServer {
  readonly service: TtsService;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The service over a real socket on an ephemeral port, engines started and settled. */
export async function startTts(env: Record<string, string> = {}): Promise<TtsTestServer> {
  const config = loadTtsConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    // An empty models directory: no Piper voice unless a test gives one.
    MODELS_DIR: mkdtempSync(join(tmpdir(), 'tts-models-')),
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    TTS_THREADS: '1',
    ...authOffUnlessGiven(env, 'TTS_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildTtsApp({
    config,
    logger: createLogger({ service: 'tts', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
    retryMs: 50,
  });
  // serve() checks espeak-ng and loads the voices once it listens (and frees them on shutdown).
  const server = await serve(service.kit, { signals: [], exit: false });
  if (env['ESPEAK_PATH'] === undefined) await service.kit.settled();
  return { service, server, url: server.url, logs, close: () => server.shutdown('test finished') };
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly bytes: Buffer;
  json(): unknown;
}

export async function postTts(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(`${url}/tts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  return {
    status: res.status,
    headers: res.headers,
    bytes,
    json: () => JSON.parse(bytes.toString('utf8')) as unknown,
  };
}

/**
 * The test's own reading of a canonical WAV header (independent of the service's parser): every
 * field checked against the others and against the file's length.
 */
export interface WavHeader {
  readonly audioFormat: number;
  readonly channels: number;
  readonly sampleRate: number;
  readonly byteRate: number;
  readonly blockAlign: number;
  readonly bitsPerSample: number;
  readonly dataBytes: number;
  readonly seconds: number;
  readonly samples: Int16Array;
}

export function readWav(buf: Buffer): WavHeader {
  expectAscii(buf, 0, 'RIFF');
  expectAscii(buf, 8, 'WAVE');
  expectAscii(buf, 12, 'fmt ');
  expectAscii(buf, 36, 'data');
  const riffSize = buf.readUInt32LE(4);
  if (riffSize !== buf.length - 8)
    throw new Error(`RIFF size ${riffSize} but the file is ${buf.length} bytes`);
  const dataBytes = buf.readUInt32LE(40);
  if (dataBytes !== buf.length - 44)
    throw new Error(`data size ${dataBytes} but ${buf.length - 44} bytes follow`);
  const header = {
    audioFormat: buf.readUInt16LE(20),
    channels: buf.readUInt16LE(22),
    sampleRate: buf.readUInt32LE(24),
    byteRate: buf.readUInt32LE(28),
    blockAlign: buf.readUInt16LE(32),
    bitsPerSample: buf.readUInt16LE(34),
  };
  const samples = new Int16Array(dataBytes / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = buf.readInt16LE(44 + i * 2);
  return { ...header, dataBytes, seconds: samples.length / header.sampleRate, samples };
}

function expectAscii(buf: Buffer, at: number, text: string): void {
  if (buf.toString('ascii', at, at + 4) !== text) throw new Error(`expected "${text}" at byte ${at}`);
}

export function rms(samples: Int16Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

/** ffprobe's view of an audio file. */
export async function ffprobe(
  path: string,
): Promise<{ codec: string; sampleRate: number; channels: number; seconds: number }> {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'stream=codec_name,sample_rate,channels:format=duration',
    '-of',
    'json',
    path,
  ]);
  const info = JSON.parse(stdout) as {
    streams: { codec_name: string; sample_rate: string; channels: number }[];
    format: { duration: string };
  };
  const s = info.streams[0];
  if (s === undefined) throw new Error('ffprobe found no audio stream');
  return {
    codec: s.codec_name,
    sampleRate: Number(s.sample_rate),
    channels: s.channels,
    seconds: Number(info.format.duration),
  };
}
