/**
 * Start-up: the knowledge bases read from their directories, validated, merged and compiled with
 * the calibration, or the reason the service cannot score (which /health reports). Nothing here
 * invents a number: a base whose conditions have no sourced prior is "not scorable" and says so.
 */
import { readFile } from 'node:fs/promises';
import type { KbFeature, KnowledgeBase } from '../domain/types.js';
import { compileModel, ModelError, parseCalibration, type CompiledModel } from '../engine/index.js';
import {
  formatProblem,
  kbLabel,
  loadKnowledgeBase,
  mergeKnowledgeBases,
  type KbLoadReport,
} from '../kb/index.js';
import { BASE_LEXICON, lexiconFromFeatures, type LexiconEntry } from '../extract/index.js';

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

export async function loadKnowledge(
  dirs: readonly string[],
  calibrationFile: string | undefined,
): Promise<Knowledge> {
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

  let calibration;
  if (calibrationFile !== undefined) {
    try {
      calibration = parseCalibration(JSON.parse(await readFile(calibrationFile, 'utf8')));
    } catch (error) {
      throw new KnowledgeUnavailable(
        `the calibration ${calibrationFile} cannot be read: ${error instanceof Error ? error.message : String(error)}`,
        bases,
      );
    }
  }
  let model: CompiledModel;
  try {
    model = compileModel(knowledgeBase, calibration);
  } catch (error) {
    if (error instanceof ModelError) throw new KnowledgeUnavailable(error.message, bases);
    throw error;
  }
  return {
    knowledgeBase,
    model,
    bases,
    conditionBase,
    features: new Map(knowledgeBase.features.map((f) => [f.id, f])),
    conditions: new Map(knowledgeBase.conditions.map((c) => [c.id, c])),
    lexicon: [...lexiconFromFeatures(knowledgeBase.features), ...BASE_LEXICON],
    calibrationSource: calibrationFile ?? null,
  };
}
