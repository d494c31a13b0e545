/** The runner's model step on top of the kit's model store (loaded lazily by main.ts). */
import {
  createProgressReporter,
  ensureModel,
  MODEL_MANIFEST,
  type ModelEntry,
  type ModelStoreLogger,
} from '@clinicalsuite/kit/models';
import { COMPONENTS } from '../api/v1alpha1/index.js';
import type { PlannedModel } from './plan.js';
import type { ModelStep } from './runner.js';

export { MODEL_MANIFEST };

/**
 * The manifest entry to fetch: the manifest's (its `file` kept: the model step passes the planned
 * path as `dest`, and a model mirror holds the file at the manifest's path), or one made of the
 * spec's `model.source`.
 */
export function entryFor(model: PlannedModel, component: keyof typeof COMPONENTS): ModelEntry {
  const base = model.id === null ? undefined : MODEL_MANIFEST[model.id];
  if (model.source === null) {
    if (!base) {
      throw new Error(
        `no model source: ${model.id === null ? 'the spec names no model.source' : `"${model.id}" is not in the model manifest`}; ` +
          `place the file at ${model.path} or set spec.services.${component}.model.source`,
      );
    }
    const sha256 = model.sha256 ?? base.sha256;
    return { ...base, ...(sha256 === undefined ? {} : { sha256 }) };
  }
  return {
    id: COMPONENTS[component].dir,
    description: `${model.file} of ${COMPONENTS[component].title}, from spec.services.${component}.model`,
    file: model.file,
    license: 'see the source',
    sources: [model.source],
    ...(model.sha256 === null ? {} : { sha256: model.sha256 }),
  };
}

function logLine(write: (line: string) => void): ModelStoreLogger {
  const line = (obj: Record<string, unknown>, msg: string) =>
    write(
      `${msg} ${Object.entries(obj)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ')}`,
    );
  return { info: line, warn: line };
}

/**
 * Fetches each planned model into its path with the kit's model store, under `env` (the runner's
 * own environment: HF_TOKEN, MODEL_MIRROR …); a catalogue model tries MODEL_MIRROR first, a
 * spec's `model.source` only that source.
 */
export function kitModelStep(
  modelsDir: string,
  retries?: number,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ModelStep {
  return async (model, { component, write }) => {
    const entry = entryFor(model, component);
    const reporter = createProgressReporter({ write: (text: string) => write(text), isTTY: false });
    try {
      const result = await ensureModel(entry, {
        modelsDir,
        dest: model.path,
        onProgress: reporter.onProgress,
        log: logLine(write),
        retries,
        env,
        mirror: model.source === null,
      });
      write(result.downloaded ? `model ready: ${result.path}` : `model present: ${result.path}`);
    } finally {
      reporter.finish();
    }
  };
}
