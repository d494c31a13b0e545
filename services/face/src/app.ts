import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ModelHost,
  Readiness,
  serviceAuth,
  buildApp,
  createLogger,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { DETECTOR_MODEL_IDS } from './adapters/detector.js';
import { loadFaceEngine } from './adapters/face-engine.js';
import { loadCoarseScorer } from './adapters/ort-scorer.js';
import type { Registry, RegistryFeed } from './adapters/registry.js';
import { SqliteRegistry } from './adapters/sqlite-registry.js';
import type { FaceConfig } from './config.js';
import { People } from './domain/people.js';
import { RegistryMirror } from './domain/registry-mirror.js';
import { createFaceMetrics } from './metrics.js';
import {
  deletePersonRoute,
  gpuStatusRoute,
  healthRoute,
  listPersonsRoute,
  rootRoute,
  statusRoute,
} from './routes/info.js';
import { recognizeBatchRoute, recognizeFacesRoute } from './routes/recognize.js';
import { registerBatchRoute, registerPersonRoute } from './routes/register.js';
import { recognizeVideoRoute } from './routes/video.js';
import { ProcessingStats, type FaceModels, type FaceRuntime } from './routes/runtime.js';

export const FACE_VERSION = '1.0.0';

export interface FaceDeps {
  readonly config: FaceConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
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

/** The pause before the `attempt`-th retry of a registry read: doubling from 250 ms up to 30 s. */
const retryPause = (attempt: number): Promise<void> => sleep(Math.min(30_000, 250 * 2 ** attempt));

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
  const logger = deps.logger ?? createLogger({ service: 'face', level: config.LOG_LEVEL });
  const readiness = new Readiness();
  const registry = deps.registry ?? new SqliteRegistry(config.registryPath);
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  // The registry in memory, kept in step with the store (deletes apply to it even while it loads).
  const mirror = new RegistryMirror({
    onError: (error, personId) => {
      logger.error({ err: error, personId }, 'could not read a changed person from the registry: retrying');
    },
    retryDelay: retryPause,
  });
  // Whether this replica hears other replicas' changes (always with SQLite). While it does not,
  // its index may hold persons deleted elsewhere: it is not ready (recognition answers 503).
  const feedState = { up: true, epoch: 0, closed: false };
  const feedDown =
    'lost the connection that keeps the registry index in step with other replicas (PostgreSQL LISTEN): reconnecting';
  const feed: RegistryFeed = {
    lost: (error) => {
      feedState.up = false;
      feedState.epoch++;
      logger.error({ err: error }, 'the registry change feed is down: reconnecting');
      readiness.setNotReady(feedDown);
    },
    restored: () => {
      const epoch = feedState.epoch;
      logger.warn('the registry change feed is back: reading the registry again');
      void (async () => {
        // What changed while nobody listened is not replayed: read it all again.
        for (let attempt = 0; epoch === feedState.epoch && !feedState.closed; attempt++) {
          try {
            await mirror.load();
          } catch (error) {
            logger.error({ err: error }, 'could not read the registry again after reconnecting: retrying');
            await retryPause(attempt);
            continue;
          }
          if (epoch !== feedState.epoch) return;
          feedState.up = true;
          logger.info('the registry index is in step again');
          if (host.state === 'ready') readiness.setReady();
          return;
        }
      })();
    },
    resync: () => {
      // While the feed is down, its return reads the registry anyway; a failed read waits for the next.
      if (!feedState.up || feedState.closed || host.state !== 'ready') return;
      mirror.load().catch((error: unknown) => {
        logger.error({ err: error }, 'could not read the registry again (periodic): retrying at the next');
      });
    },
  };
  // The model host says ready once the models load; not while the feed is down.
  readiness.onChange((ready) => {
    if (ready && !feedState.up) readiness.setNotReady(feedDown);
  });
  const host = new ModelHost<FaceModels>({
    modelPaths: [config.detectorPath, config.recognizerPath],
    readiness,
    logger,
    pollMs: config.MODEL_POLL_MS,
    hint: `run \`npm run models -- fetch ${DETECTOR_MODEL_IDS[config.FACE_DETECTOR]}\` and \`npm run models -- fetch face-recognizer\`, or mount the ONNX files there`,
    load: async () => {
      // `auto` tries CUDA only where a GPU is visible (onnxruntime logs errors when it cannot load it).
      const device =
        config.FACE_DEVICE === 'auto' && !(await gpu.read()).available ? 'cpu' : config.FACE_DEVICE;
      const engine = await loadFaceEngine({
        detectorPath: config.detectorPath,
        recognizerPath: config.recognizerPath,
        device,
        threads: config.threads,
        detector: {
          kind: config.FACE_DETECTOR,
          minScore: config.minDetectionScore,
          inputSize: config.FACE_DETECTOR_INPUT_SIZE,
        },
        minFaceSize: config.FACE_MIN_SIZE,
        recognizer: {
          channels: config.FACE_RECOGNIZER_CHANNELS,
          mean: config.FACE_RECOGNIZER_MEAN,
          std: config.FACE_RECOGNIZER_STD,
        },
      });
      const coarse = await loadCoarseScorer(engine.dim, config.threads);
      mirror.open(
        {
          loadAll: () => registry.loadAll(engine.modelId),
          loadPerson: (id) => registry.loadPerson(id, engine.modelId),
        },
        () => new People(engine.dim, coarse.scorer),
      );
      // Listen first, then read: a change committed while the registry is read is heard, and
      // applied after the read (never overwritten by it).
      await registry.subscribe((change) => {
        if (change.kind === 'delete') mirror.deleted(change.personId);
        else
          mirror.changed(change.personId).catch((error: unknown) => {
            logger.error(
              { err: error, personId: change.personId },
              'could not reload a person changed elsewhere',
            );
          });
      }, feed);
      await mirror.load();
      const otherModelPersons = await registry.countOtherModels(engine.modelId);
      return {
        engine,
        get people(): People {
          return mirror.people as People;
        },
        otherModelPersons,
        dispose: async () => {
          mirror.close();
          await engine.dispose();
          await coarse.dispose();
        },
      };
    },
    describe: ({ engine, people, otherModelPersons: others }) => {
      return {
        fields: {
          device: engine.device,
          recognizer: engine.modelId,
          persons: people.persons,
          embeddings: people.embeddings,
        },
        warnings:
          others === 0
            ? []
            : [
                `${String(others)} registered persons were enrolled with another recognition model and will not be ` +
                  `recognized by ${engine.modelId}: register them again`,
              ],
      };
    },
  });
  const startedAt = performance.now();
  const kit = buildApp({
    service: 'face',
    title: 'Face recognition service',
    version: FACE_VERSION,
    config,
    logger,
    readiness,
    gpu,
    errorShape: 'envelope',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics }) => {
      const rt: FaceRuntime = {
        config,
        host,
        registry,
        mirror,
        feed: feedState,
        readiness,
        gate,
        gpu,
        metrics: createFaceMetrics(metrics, {
          persons: () => host.engine?.people.persons ?? 0,
          embeddings: () => host.engine?.people.embeddings ?? 0,
        }),
        stats: new ProcessingStats(),
        startedAt,
        version: FACE_VERSION,
      };
      return [
        rootRoute(rt),
        healthRoute(rt),
        statusRoute(rt),
        gpuStatusRoute(rt),
        listPersonsRoute(rt),
        deletePersonRoute(rt),
        registerPersonRoute(rt),
        registerBatchRoute(rt),
        recognizeFacesRoute(rt),
        recognizeBatchRoute(rt),
        recognizeVideoRoute(rt),
      ];
    },
  });
  return {
    kit,
    host,
    registry,
    close: async () => {
      feedState.closed = true;
      await host.close();
      await registry.close();
    },
  };
}
