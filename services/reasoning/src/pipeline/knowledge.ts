/**
 * Start-up: the knowledge bases read from their directories, validated, merged and compiled with
 * the calibration, or the reason the service cannot score (which /health reports). Nothing here
 * invents a number: a base whose conditions have no sourced prior is "not scorable" and says so.
 *
 * The calibration (engine/calibration.ts: posterior ∝ π · L^α) belongs to one base id and version:
 * - REASONING_CALIBRATION=<file>: that file; it must be for the loaded (merged) base.
 * - REASONING_CALIBRATION=none: no calibration (α = 1), whatever the base directories hold.
 * - unset: the `calibration.json` a base directory holds, when it was fitted for the merged base
 *   (its kbId and kbVersion); α = 1 when no directory holds one.
 * A calibration fitted for another base or version is refused (the service is not ready and
 * /health names the file, the base it was fitted for, the loaded one and how to fix it): an α fitted
 * on another base does not hold for this one, and silently scoring uncalibrated would hide it.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KbFeature, KnowledgeBase } from '../domain/types.js';
import {
  compileModel,
  ModelError,
  parseCalibration,
  type Calibration,
  type CompiledModel,
} from '../engine/index.js';
import {
  formatProblem,
  kbLabel,
  loadKnowledgeBase,
  mergeKnowledgeBases,
  type KbLoadReport,
} from '../kb/index.js';
import { BASE_LEXICON, lexiconFromFeatures, prepareLexicon, type LexiconEntry } from '../extract/index.js';

/** The file name of a calibration kept in a knowledge base's directory. */
export const CALIBRATION_FILE = 'calibration.json';
/** REASONING_CALIBRATION's value for "score uncalibrated (α = 1)". */
export const NO_CALIBRATION = 'none';
/** How to refit α, for the messages. */
const REFIT = 'node test/eval/reasoning/calibrate.js --out <file>';

export interface LoadedBase {
  readonly id: string;
  readonly version: string;
  readonly dir: string;
  readonly report: KbLoadReport;
}

export interface Knowledge {
  /** The merged base the model was compiled from. */
  readonly knowledgeBase: KnowledgeBase;
  readonly model: CompiledModel;
  readonly bases: readonly LoadedBase[];
  /** Condition id → the id of the base it comes from. */
  readonly conditionBase: ReadonlyMap<string, string>;
  readonly features: ReadonlyMap<string, KbFeature>;
  readonly conditions: ReadonlyMap<string, KnowledgeBase['conditions'][number]>;
  /** The rule pass's lexicon: the bases' features first (their findings carry the feature id). */
  readonly lexicon: readonly LexiconEntry[];
  /** Where the calibration came from (the file), or null for α = 1. */
  readonly calibrationSource: string | null;
}

/** The bases read, validated and merged, before any calibration. */
export interface MergedBases {
  readonly knowledgeBase: KnowledgeBase;
  readonly bases: readonly LoadedBase[];
  readonly conditionBase: ReadonlyMap<string, string>;
}

/** The knowledge cannot be used: `reason` says why, for /health and the log. */
export class KnowledgeUnavailable extends Error {
  constructor(
    message: string,
    readonly bases: readonly LoadedBase[] = [],
  ) {
    super(message);
    this.name = 'KnowledgeUnavailable';
  }
}

const MAX_LISTED_PROBLEMS = 5;

/**
 * Reads, validates and merges the bases (in `dirs` order); throws `KnowledgeUnavailable` naming
 * why they cannot be scored. The calibration tool uses this too, to fit α for the same merged base.
 */
export async function loadMergedBases(dirs: readonly string[]): Promise<MergedBases> {
  const results = await Promise.all(
    dirs.map(async (dir) => ({ dir, label: kbLabel(dir), result: await loadKnowledgeBase(dir) })),
  );
  const problems = results.flatMap((r) => r.result.problems);
  if (problems.length > 0) {
    const listed = problems.slice(0, MAX_LISTED_PROBLEMS).map(formatProblem).join('; ');
    const more =
      problems.length > MAX_LISTED_PROBLEMS ? ` (and ${problems.length - MAX_LISTED_PROBLEMS} more)` : '';
    throw new KnowledgeUnavailable(`the knowledge base files are not valid: ${listed}${more}`);
  }
  const bases: LoadedBase[] = [];
  const inputs: { label: string; knowledgeBase: KnowledgeBase }[] = [];
  const conditionBase = new Map<string, string>();
  for (const { dir, label, result } of results) {
    if (!result.ok) continue;
    bases.push({
      id: result.knowledgeBase.id,
      version: result.knowledgeBase.version,
      dir,
      report: result.report,
    });
    inputs.push({ label, knowledgeBase: result.knowledgeBase });
    for (const c of result.knowledgeBase.conditions) conditionBase.set(c.id, result.knowledgeBase.id);
  }
  const scorable = bases.reduce((n, b) => n + b.report.conditions.scorable, 0);
  if (scorable === 0) {
    const each = bases
      .map(
        (b) =>
          `${b.id}@${b.version} defines ${b.report.conditions.defined} conditions, none with a sourced prior yet`,
      )
      .join('; ');
    throw new KnowledgeUnavailable(
      `no knowledge base has a scorable condition (${each}): a curator must add each condition's prior ` +
        "and its findings' probabilities with their sources (see the base's README.md); nothing is scored until then",
      bases,
    );
  }
  const merged = inputs.length === 1 && inputs[0] !== undefined ? null : mergeKnowledgeBases(inputs);
  if (merged !== null && !merged.ok) {
    throw new KnowledgeUnavailable(
      `the knowledge bases cannot be merged: ${merged.problems.slice(0, MAX_LISTED_PROBLEMS).map(formatProblem).join('; ')}`,
      bases,
    );
  }
  const knowledgeBase =
    merged === null ? (inputs[0] as { knowledgeBase: KnowledgeBase }).knowledgeBase : merged.knowledgeBase;

  return { knowledgeBase, bases, conditionBase };
}

async function readCalibration(
  file: string,
  how: string,
  bases: readonly LoadedBase[],
): Promise<Calibration> {
  try {
    return parseCalibration(JSON.parse(await readFile(file, 'utf8')));
  } catch (error) {
    throw new KnowledgeUnavailable(
      `the calibration ${file} (${how}) cannot be read: ${error instanceof Error ? error.message : String(error)}`,
      bases,
    );
  }
}

function mismatch(
  file: string,
  how: string,
  calibration: Calibration,
  kb: KnowledgeBase,
  bases: readonly LoadedBase[],
): KnowledgeUnavailable {
  const fitted = `${calibration.kbId}@${calibration.kbVersion}`;
  const loaded = `${kb.id}@${kb.version}`;
  const why =
    calibration.kbId === kb.id
      ? `the base changed since α was fitted (version ${calibration.kbVersion}, now ${kb.version})`
      : bases.length > 1
        ? `the loaded base is merged from ${bases.length} directories, and α fitted for one base does not hold for the merged one`
        : 'α fitted for one base does not hold for another';
  return new KnowledgeUnavailable(
    `the calibration ${file} (${how}) was fitted for ${fitted}, not for the loaded base ${loaded}: ${why}. ` +
      `Refit α for this base (${REFIT}) and point REASONING_CALIBRATION at it (or replace the base directory's ${CALIBRATION_FILE}), ` +
      `or set REASONING_CALIBRATION=${NO_CALIBRATION} to score uncalibrated (α = 1)`,
    bases,
  );
}

/**
 * The calibration to compile with (see the header) and its file, or undefined and null for α = 1.
 * Throws `KnowledgeUnavailable` for an unreadable or mismatched one.
 */
export async function resolveCalibration(
  merged: MergedBases,
  setting: string | undefined,
): Promise<{ calibration: Calibration | undefined; file: string | null }> {
  const { knowledgeBase: kb, bases } = merged;
  const matches = (c: Calibration): boolean => c.kbId === kb.id && c.kbVersion === kb.version;
  if (setting === NO_CALIBRATION) return { calibration: undefined, file: null };
  if (setting !== undefined) {
    const how = 'REASONING_CALIBRATION';
    const calibration = await readCalibration(setting, how, bases);
    if (!matches(calibration)) throw mismatch(setting, how, calibration, kb, bases);
    return { calibration, file: setting };
  }
  let found: { calibration: Calibration; file: string } | undefined;
  for (const base of bases) {
    const file = join(base.dir, CALIBRATION_FILE);
    if (!existsSync(file)) continue;
    const how = `in the directory of base ${base.id}@${base.version}`;
    const calibration = await readCalibration(file, how, bases);
    if (!matches(calibration)) throw mismatch(file, how, calibration, kb, bases);
    found ??= { calibration, file };
  }
  return found ?? { calibration: undefined, file: null };
}

/**
 * The bases merged and compiled with their calibration (`calibrationSetting`: REASONING_CALIBRATION,
 * a file or `none`; unset: a base directory's matching calibration.json). Throws
 * `KnowledgeUnavailable` naming why the service cannot score.
 */
export async function loadKnowledge(
  dirs: readonly string[],
  calibrationSetting: string | undefined,
): Promise<Knowledge> {
  const merged = await loadMergedBases(dirs);
  const { knowledgeBase, bases, conditionBase } = merged;
  const { calibration, file } = await resolveCalibration(merged, calibrationSetting);
  let model: CompiledModel;
  try {
    model = compileModel(knowledgeBase, calibration);
  } catch (error) {
    if (error instanceof ModelError) throw new KnowledgeUnavailable(error.message, bases);
    throw error;
  }
  const lexicon = [...lexiconFromFeatures(knowledgeBase.features), ...BASE_LEXICON];
  // Folded and indexed once here, not by the first request.
  prepareLexicon(lexicon);
  return {
    knowledgeBase,
    model,
    bases,
    conditionBase,
    features: new Map(knowledgeBase.features.map((f) => [f.id, f])),
    conditions: new Map(knowledgeBase.conditions.map((c) => [c.id, c])),
    lexicon,
    calibrationSource: file,
  };
}
