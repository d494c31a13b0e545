import type { Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { FaceConfig } from '../config.js';
import { People } from '../domain/people.js';
import type { RegistryMirror } from '../domain/registry-mirror.js';
import { DETECTOR_MODEL_IDS } from './detector.js';
import { loadFaceEngine, type FaceEngine } from './face-engine.js';
import { loadCoarseScorer } from './ort-scorer.js';
import type { Registry, RegistryFeed } from './registry.js';

/**
 * The face service's models as one kit model resource: the detector and the recognizer, the
 * coarse scorer, and the registry read into memory for the recognizer they load (the index is
 * only good for the model whose embeddings it holds).
 */

export interface FaceModels {
  readonly engine: FaceEngine;
  readonly people: People;
  /** Registered persons whose embeddings came from another recognizer (never matched). */
  readonly otherModelPersons: number;
  dispose(): Promise<void>;
}

export interface FaceModelsDeps {
  readonly config: FaceConfig;
  readonly gpu: GpuStatusReader;
  readonly registry: Registry;
  readonly mirror: RegistryMirror;
  /** Told when the feed of other replicas' changes breaks and returns. */
  readonly feed: RegistryFeed;
  readonly logger: Logger;
}

/** What a user does about a missing model file. */
export function faceModelsHint(config: FaceConfig): string {
  return (
    `run \`npm run models -- fetch ${DETECTOR_MODEL_IDS[config.FACE_DETECTOR]}\` and ` +
    '`npm run models -- fetch face-recognizer`, or mount the ONNX files there'
  );
}

export async function loadFaceModels(deps: FaceModelsDeps): Promise<FaceModels> {
  const { config, gpu, registry, mirror, logger } = deps;
  // `auto` tries CUDA only where a GPU is visible (onnxruntime logs errors when it cannot load it).
  const device = config.FACE_DEVICE === 'auto' && !(await gpu.read()).available ? 'cpu' : config.FACE_DEVICE;
  const engine = await loadFaceEngine({
    detectorPath: config.detectorPath,
    recognizerPath: config.recognizerPath,
    device,
    threads: config.threads,
    detector: {
      kind: config.FACE_DETECTOR,
      minScore: config.minDetectionScore,
      inputSize: config.FACE_DETECTOR_INPUT_SIZE,
      scanMinSize: config.FACE_SCAN_MIN_SIZE,
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
  }, deps.feed);
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
}

/** The "model loaded" log line's fields, and a warning about persons of another recognizer. */
export function describeFaceModels({ engine, people, otherModelPersons: others }: FaceModels): {
  fields: Record<string, unknown>;
  warnings: string[];
} {
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
}
