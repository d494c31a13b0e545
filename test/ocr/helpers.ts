import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildOcrApp, type OcrService } from '../../services/ocr/src/app.js';
import { loadOcrConfig } from '../../services/ocr/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

export interface OcrTestServer {
  readonly service: OcrService;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The OCR service built with buildOcrApp, served on an ephemeral loopback port, engine settled. */
export async function startOcr(env: Record<string, string> = {}): Promise<OcrTestServer> {
  const config = loadOcrConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...authOffUnlessGiven(env, 'OCR_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildOcrApp({
    config,
    logger: createLogger({ service: 'ocr', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
    engineRetryMs: 60_000,
  });
  // serve() starts the engine once it listens; the first look for it is awaited (found or not).
  const server = await serve(service.kit, { signals: [], exit: false });
  await service.engine.attempted();
  return { service, server, url: server.url, logs, close: () => server.shutdown('test finished') };
}

export interface Line {
  text: string;
  confidence: number;
  box: { x: number; y: number; width: number; height: number };
}
export interface Page {
  page: number;
  width: number;
  height: number;
  rotation_applied: number;
  orientation_confidence: number | null;
  skew_degrees: number;
  text: string;
  mean_confidence: number | null;
  lines: Line[];
}
export interface OcrBody {
  text: string;
  language: string;
  mean_confidence: number | null;
  pages: Page[];
  page_count: number;
  format: string;
  processing_time_ms: number;
  engine: { name: string; version: string; languages: string };
  detail?: unknown;
}

/** POSTs `bytes` as the multipart part `file` with `fields`. */
export async function ocr(
  url: string,
  bytes: Buffer | undefined,
  fields: Record<string, string> = {},
  name = 'page.png',
): Promise<{ status: number; body: OcrBody }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (bytes !== undefined) form.append('file', new Blob([bytes]), name);
  const res = await fetch(`${url}/ocr`, { method: 'POST', body: form });
  return { status: res.status, body: (await res.json()) as OcrBody };
}
