import { performance } from 'node:perf_hooks';
import {
  ModelHost,
  Readiness,
  authFromConfig,
  buildApp,
  createLogger,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { DETECTOR_MODEL_IDS } from './adapters/detector.js';
import { loadFaceEngine } from './adapters/face-engine.js';
import { loadCoarseScorer } from './adapters/ort-scorer.js';
import type { Registry } from './adapters/registry.js';
import { SqliteRegistry } from './adapters/sqlite-registry.js';
import type { FaceConfig } from './config.js';
import { People } from './domain/people.js';
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

/**
 * The face service: no credentials by default (the spec's requests to it carry none; it is meant
 * to be reached only from the suite's components, which the operator's NetworkPolicy enforces);
 * AUTH_TOKENS_FILE turns bearer auth on.
 */
export function buildFaceApp(deps: FaceDeps): FaceService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'face', level: config.LOG_LEVEL });
  const readiness = new Readiness();
  const registry = deps.registry ?? new SqliteRegistry(config.registryPath);
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
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
      const people = new People(engine.dim, coarse.scorer);
      const stored = await registry.loadAll(engine.modelId);
      const otherModelPersons = await registry.countOtherModels(engine.modelId);
      const byPerson = new Map<number, Float32Array[]>();
      for (const e of stored.embeddings)
        byPerson.set(e.personId, [...(byPerson.get(e.personId) ?? []), e.vector]);
      for (const p of stored.persons) people.add(p.id, p.name, byPerson.get(p.id) ?? []);
      // Other replicas' registrations and deletions (PostgreSQL), applied to this index.
      await registry.subscribe(
        (change) => {
          if (change.kind === 'delete') {
            people.remove(change.personId);
            return;
          }
          // Replace the person's rows with what is stored now (this replica's own change included).
          void registry.loadPerson(change.personId, engine.modelId).then(
            (found) => {
              people.remove(change.personId);
              if (found !== null) people.add(found.person.id, found.person.name, found.embeddings);
            },
            (error: unknown) => {
              logger.error(
                { err: error, personId: change.personId },
                'could not reload a person changed elsewhere',
              );
            },
          );
        },
        (error) => {
          logger.error({ err: error }, 'lost the registry change feed');
          readiness.setNotReady(
            'lost the connection that keeps the registry index in step with other replicas: restart the service',
          );
        },
      );
      return {
        engine,
        people,
        otherModelPersons,
        dispose: async () => {
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
  const auth = authFromConfig(config);
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
      await host.close();
      await registry.close();
    },
  };
}
