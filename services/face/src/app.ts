import { performance } from 'node:perf_hooks';
import { createKit, serviceAuth, type KitApp, type Logger, type ModelHost } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import {
  describeFaceModels,
  faceModelsHint,
  loadFaceModels,
  type FaceModels,
} from './adapters/face-models.js';
import type { Registry } from './adapters/registry.js';
import { RegistryFeedWatch, registryMirror } from './adapters/registry-feed.js';
import { SqliteRegistry } from './adapters/sqlite-registry.js';
import type { FaceConfig } from './config.js';
import { createFaceMetrics } from './metrics.js';
import { faceRoutes } from './routes/index.js';
import { ProcessingStats, type FaceRuntime } from './routes/runtime.js';

export const FACE_VERSION = '1.0.0';

export interface FaceDeps {
  readonly config: FaceConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  /** An open registry (PostgreSQL, opened by main), closed with the service; default SQLite. */
  readonly registry?: Registry;
  readonly processMetrics?: boolean;
}

export interface FaceService {
  readonly kit: KitApp;
  readonly host: ModelHost<FaceModels>;
  readonly registry: Registry;
  /** Frees the models and closes the registry. */
  close(): Promise<void>;
}

/**
 * The face service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `face` scope (FACE_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildFaceApp(deps: FaceDeps): FaceService {
  const { config } = deps;
  // First: a configuration without credentials stops here, before the registry is opened.
  const auth = serviceAuth(config, {
    scope: 'face',
    tokenEnv: 'FACE_API_TOKEN',
    token: config.FACE_API_TOKEN,
  });
  const kit = createKit({
    service: 'face',
    title: 'Face recognition service',
    version: FACE_VERSION,
    config,
    errorShape: 'envelope',
    ...(auth === undefined ? {} : { auth }),
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const { logger, gpu } = kit;
  const registry = kit.own(deps.registry ?? new SqliteRegistry(config.registryPath), (r) => r.close());
  // The registry in memory, kept in step with the store (deletes apply to it even while it loads).
  const mirror = registryMirror(logger);
  const feed = kit.own(new RegistryFeedWatch(mirror, kit.readiness.condition(), logger), (f) => f.close());
  const host = kit.model<FaceModels>({
    modelPaths: [config.detectorPath, config.recognizerPath],
    pollMs: config.MODEL_POLL_MS,
    hint: faceModelsHint(config),
    load: () => loadFaceModels({ config, gpu, registry, mirror, feed, logger }),
    describe: describeFaceModels,
  });
  const rt: FaceRuntime = {
    config,
    host,
    registry,
    mirror,
    feed,
    readiness: kit.readiness,
    gate: kit.gate,
    gpu,
    metrics: createFaceMetrics(kit.metrics, {
      persons: () => host.engine?.people.persons ?? 0,
      embeddings: () => host.engine?.people.embeddings ?? 0,
    }),
    stats: new ProcessingStats(),
    startedAt: performance.now(),
    version: FACE_VERSION,
  };
  const app = kit.mount(faceRoutes(rt));
  return { kit: app, host, registry, close: () => app.close() };
}
