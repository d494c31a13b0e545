/**
 * A component's model in its pod: the file (shared planning with the local runner), the volume
 * mounted read-only at /models, and whether an init container fills it with the model store CLI.
 *
 * - spec.model.existingClaim: that claim is mounted; it already holds the model, so nothing is
 *   fetched and no PVC is created. MODEL_PATH is set only when a file is known.
 * - a model (catalogue id, spec.model.source or spec.model.file): a PVC `<suite>-<dir>-models`,
 *   filled by `fetch-model` (idempotent: the CLI skips a verified file) into
 *   `/models/<dir>/<file>` (always `--dest`, so the path is the one MODEL_PATH names).
 * - neither: no model volume at all.
 *
 * A multimodal model's projector (spec.model.projector, medllm's mmproj GGUF) is one more file in
 * the same volume: `fetch-projector` fetches it after the model the same way (with a source; an
 * existingClaim or a bare `file` must hold it already), and the catalogue's `projectorEnv`
 * (MMPROJ_PATH) names it in the ConfigMap.
 */
import { MODEL_MANIFEST } from '@clinicalsuite/kit/models';
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { planExtraModels, planModel, planProjector, type PlannedModel } from '../plan/service-env.js';
import { objectName } from './names.js';
import { MODELS_DIR, type OwnedSuite } from './types.js';

/** Model volume size when the spec sets none, by component (the file plus room for an update). */
export const DEFAULT_MODEL_VOLUME_SIZE: Readonly<Record<ComponentKey, string>> = {
  llm: '10Gi',
  agent: '1Gi',
  face: '2Gi',
  medllm: '20Gi',
  taskProxy: '1Gi',
  reasoning: '10Gi',
  taskAgent: '1Gi',
  stt: '5Gi',
  ocr: '1Gi',
  tts: '5Gi',
  codeSearch: '2Gi',
  patientSim: '1Gi',
};

/** The model store CLI inside the image (services/kit/src/models/cli.ts). */
export const MODEL_CLI = 'services/kit/dist/models/cli.js';

export interface PodModel {
  /** The file MODEL_PATH names, or null. */
  readonly planned: PlannedModel | null;
  /** The projector file the component's `projectorEnv` names, or null. */
  readonly projector: PlannedModel | null;
  /** Claim mounted at /models, or null for no model volume. */
  readonly claimName: string | null;
  /** Whether the operator creates that claim (false for existingClaim). */
  readonly ownClaim: boolean;
  /** Arguments of `node <MODEL_CLI>` in the init container, or null when nothing is fetched. */
  readonly fetchArgs: readonly string[] | null;
  /**
   * The projector and the component's further models: an init container each (`fetch-projector`,
   * `fetch-<id>`), into the same volume.
   */
  readonly extraFetches: readonly { readonly id: string; readonly args: readonly string[] }[];
}

export function plannedModel(suite: OwnedSuite, key: ComponentKey): PlannedModel | null {
  return planModel(suite, key, MODELS_DIR, MODEL_MANIFEST);
}

export function plannedProjector(suite: OwnedSuite, key: ComponentKey): PlannedModel | null {
  return planProjector(suite, key, MODELS_DIR);
}

/** `fetch <target> --dest <path> --models-dir /models [--sha256 <hex>]`, or null with no target. */
function fetchArgs(model: PlannedModel): string[] | null {
  const target = model.source ?? model.id;
  if (target === null) return null;
  const args = ['fetch', target, '--dest', model.path, '--models-dir', MODELS_DIR];
  if (model.sha256 !== null) args.push('--sha256', model.sha256);
  return args;
}

export function podModel(suite: OwnedSuite, key: ComponentKey): PodModel {
  const planned = plannedModel(suite, key);
  const projector = plannedProjector(suite, key);
  const existingClaim = suite.spec.services[key]?.model?.existingClaim;
  if (existingClaim !== undefined)
    return {
      planned,
      projector,
      claimName: existingClaim,
      ownClaim: false,
      fetchArgs: null,
      extraFetches: [],
    };
  if (planned === null)
    return { planned, projector, claimName: null, ownClaim: false, fetchArgs: null, extraFetches: [] };
  const claimName = objectName(suite, key, 'models');
  // A spec.model.file (or projector.file) with neither source nor catalogue model has nothing to
  // fetch it from: the volume is created and the service reports the missing file until someone
  // puts it there.
  const projectorArgs = projector === null ? null : fetchArgs(projector);
  const extraFetches = [
    ...(projectorArgs === null ? [] : [{ id: 'projector', args: projectorArgs }]),
    ...planExtraModels(suite, key, MODELS_DIR, MODEL_MANIFEST).map((m) => ({
      id: m.id ?? m.file,
      args: ['fetch', m.id ?? m.file, '--dest', m.path, '--models-dir', MODELS_DIR],
    })),
  ];
  return { planned, projector, claimName, ownClaim: true, fetchArgs: fetchArgs(planned), extraFetches };
}
