import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildSttApp, type SttService } from '../../services/stt/src/app.js';
import { loadSttConfig } from '../../services/stt/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

export interface SttTestServer {
  readonly service: SttService;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The service over a real socket on an ephemeral port, engines started and settled. */
export async function startStt(env: Record<string, string> = {}, settle = true): Promise<SttTestServer> {
  const config = loadSttConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...authOffUnlessGiven(env, 'STT_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildSttApp({
    config,
    logger: createLogger({ service: 'stt', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
  });
  // serve() starts the engines once it listens, and stops them on shutdown.
  const server = await serve(service.kit, { signals: [], exit: false });
  if (settle) await service.settled();
  return { service, server, url: server.url, logs, close: () => server.shutdown('test finished') };
}

export interface Transcription {
  text: string;
  language: string;
  backend: string;
  engine: string;
  model: string;
  duration_seconds: number;
  segments: { start: number; end: number; text: string; confidence: number | null }[];
  processing_time_ms: number;
}

/** POSTs `file` (a path, or bytes with a name) and form fields to /transcribe. */
export async function transcribe(
  url: string,
  file: string | { name: string; bytes: Uint8Array } | undefined,
  fields: Record<string, string> = {},
  init: RequestInit = {},
): Promise<{ status: number; body: Record<string, unknown> & Partial<Transcription> }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file !== undefined) {
    const { name, bytes } =
      typeof file === 'string' ? { name: basename(file), bytes: readFileSync(file) } : file;
    form.append('file', new Blob([bytes]), name);
  }
  const res = await fetch(`${url}/transcribe`, { method: 'POST', body: form, ...init });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & Partial<Transcription> };
}

/** Processes whose command line holds `marker` (the test's own engine processes). */
export function processesMatching(marker: string): number {
  // This test process's descendants only: another test file may run the same engine beside it.
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args='])
    .toString()
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] ?? '' }));
  const ours = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const r of rows) {
      if (!ours.has(r.pid) && ours.has(r.ppid)) {
        ours.add(r.pid);
        grew = true;
      }
    }
  }
  return rows.filter((r) => r.pid !== process.pid && ours.has(r.pid) && r.args.includes(marker)).length;
}
