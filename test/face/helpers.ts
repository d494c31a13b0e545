import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel } from '../../services/kit/src/models/index.js';
import type { Registry } from '../../services/face/src/adapters/registry.js';
import { buildFaceApp, type FaceService } from '../../services/face/src/app.js';
import { loadFaceConfig } from '../../services/face/src/config.js';
import { ensureFacePhotos, type FacePhoto } from '../fixtures/photos/face-photos.js';
import { captureLogs } from '../kit/helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

/** The real default models (fetched into the models directory once) and the real photos. */
export async function ensureFaceFixtures(): Promise<Record<FacePhoto, string>> {
  const modelsDir = defaultModelsDir(process.env);
  for (const id of ['face-detector', 'face-detector-retinaface', 'face-recognizer']) {
    const entry = MODEL_MANIFEST[id];
    if (entry === undefined) throw new Error(`no ${id} in the manifest`);
    await ensureModel(entry, { modelsDir });
  }
  return ensureFacePhotos();
}

export interface FaceTestServer {
  readonly service: FaceService;
  readonly server: RunningServer;
  readonly url: string;
  readonly dataDir: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** Listening with the models loaded (or, with `settle: false`, still loading). */
export async function startFace(
  env: Record<string, string> = {},
  registry?: Registry,
  { settle = true }: { settle?: boolean } = {},
): Promise<FaceTestServer> {
  const dataDir = env['DATA_DIR'] ?? mkdtempSync(join(tmpdir(), 'face-test-'));
  const config = loadFaceConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    FACE_DEVICE: 'cpu',
    FACE_THREADS: '1',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...authOffUnlessGiven(env, 'FACE_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildFaceApp({
    config,
    ...(registry === undefined ? {} : { registry }),
    logger: createLogger({ service: 'face', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
  });
  // serve() loads the models once it listens, and frees them and closes the registry on shutdown.
  const server = await serve(service.kit, { signals: [], exit: false });
  if (settle) await service.host.settled();
  return { service, server, url: server.url, dataDir, logs, close: () => server.shutdown('test finished') };
}

/** A multipart form: text fields, then files (path or raw bytes with a name). */
export function form(
  fields: Record<string, string>,
  files: { field: string; path?: string; bytes?: Buffer; name?: string }[] = [],
): FormData {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.append(k, v);
  for (const f of files) {
    const bytes = f.bytes ?? readFileSync(f.path ?? '');
    data.append(f.field, new Blob([bytes]), f.name ?? basename(f.path ?? 'upload.bin'));
  }
  return data;
}

export interface Envelope<T = Record<string, unknown>> {
  success: boolean;
  message: string;
  data: T;
}

export async function post<T = Record<string, unknown>>(
  url: string,
  body: FormData,
): Promise<{ status: number; body: Envelope<T> }> {
  const res = await fetch(url, { method: 'POST', body });
  return { status: res.status, body: (await res.json()) as Envelope<T> };
}
