/**
 * Rows in, a KnowledgeBase out (pure). Every problem is listed at once, each with its file, line
 * and column: a number without a source, a source kb.json does not list, a probability outside
 * (0, 1), priors adding up to 1 or more, duplicate ids, links to unknown conditions or features,
 * malformed ICD-10 codes and HPO ids.
 *
 * A condition with neither a prior nor a prior source is defined but NOT SCORABLE: it stays out of
 * the KnowledgeBase (so the engine never scores a guessed prior) and is listed in the report, as
 * are its links, dropped with it. A prior without a source is an error, never "not scorable".
 */
import type { KbCondition, KbFeature, KbLink, KbSource, KnowledgeBase } from '../domain/types.js';
import { fileLabel, parseKbTexts, type KbRowLines, type KbTexts, type ParsedKb } from './format.js';
import type { KbProblem, KbProblemCode } from './problems.js';
import {
  EVIDENCE_GRADES,
  HPO_ID_PATTERN,
  ICD10_PATTERN,
  KB_FILES,
  type ConditionRow,
  type FeatureRow,
  type KbManifest,
  type EvidenceGrade,
  type LinkRow,
  type SourceKind,
} from './schema.js';

/** The leak of a base with no scorable condition and no leak declared: never used for scoring. */
export const NO_LEAK_SOURCE = 'none (no scorable condition)';

export interface KbValidationInput {
  readonly manifest: KbManifest | null;
  readonly conditions: readonly ConditionRow[];
  readonly features: readonly FeatureRow[];
  readonly links: readonly LinkRow[];
  /** The line of each row; default: the row's index + 2 (the header is line 1). */
  readonly lines?: KbRowLines;
  readonly partialIds?: ParsedKb['partialIds'];
}

export interface NotScorableCondition {
  readonly id: string;
  readonly title_en: string;
  readonly icd10: string | null;
  readonly reason: string;
}

/** What a load found, for logs and the operator: counts and what was left out, never patient data. */
export interface KbLoadReport {
  readonly id: string;
  readonly version: string;
  readonly sources: number;
  readonly conditions: {
    readonly defined: number;
    readonly scorable: number;
    readonly notScorable: readonly NotScorableCondition[];
    /** Scorable conditions that no link describes: only their prior speaks for them. */
    readonly withoutLinks: readonly string[];
  };
  readonly features: number;
  readonly links: {
    readonly defined: number;
    readonly used: number;
    /** Links of not-scorable conditions, left out with them. */
    readonly dropped: number;
  };
  /** Sum of the scorable conditions' priors; 1 - this is the prior of "none of the above". */
  readonly priorSum: number;
  /** How many numbers (priors, link probabilities, leaks) cite each source. */
  readonly numbersBySource: Readonly<Record<string, number>>;
  /** Sources of kind `modelling-choice` that some number cites: defaults, not clinical data. */
  readonly modellingChoices: readonly string[];
  /** How many numbers have each evidence grade (the kind of their source). */
  readonly numbersByGrade: Readonly<Partial<Record<EvidenceGrade, number>>>;
}

function numbersByGrade(
  counts: Readonly<Record<string, number>>,
  kinds: ReadonlyMap<string, SourceKind>,
): Partial<Record<EvidenceGrade, number>> {
  const byGrade: Partial<Record<EvidenceGrade, number>> = {};
  for (const [id, n] of Object.entries(counts)) {
    const kind = kinds.get(id);
    if (kind === undefined) continue;
    const grade = EVIDENCE_GRADES[kind];
    byGrade[grade] = (byGrade[grade] ?? 0) + n;
  }
  return byGrade;
}

export type KbValidationResult =
  | {
      readonly ok: true;
      readonly knowledgeBase: KnowledgeBase;
      readonly report: KbLoadReport;
      readonly problems: readonly [];
    }
  | {
      readonly ok: false;
      readonly knowledgeBase: null;
      readonly report: null;
      readonly problems: readonly KbProblem[];
    };

const inOpenUnitInterval = (p: number): boolean => p > 0 && p < 1;

/** Validates parsed rows into a KnowledgeBase; `label` prefixes file names in problems. */
export function validateKb(input: KbValidationInput, label?: string): KbValidationResult {
  const problems: KbProblem[] = [];
  const files = {
    manifest: fileLabel(KB_FILES.manifest, label),
    conditions: fileLabel(KB_FILES.conditions, label),
    features: fileLabel(KB_FILES.features, label),
    links: fileLabel(KB_FILES.links, label),
  };
  const add = (
    file: string,
    row: number | null,
    column: string | null,
    code: KbProblemCode,
    message: string,
  ) => problems.push({ file, row, column, code, message });
  const lineOf = (kind: keyof KbRowLines, index: number): number => input.lines?.[kind][index] ?? index + 2;

  // Sources: unique ids; a number citing one that is not listed is a problem (unless kb.json
  // itself is broken, which is already reported and would only repeat here).
  const manifest = input.manifest;
  const sourceKinds = new Map<string, SourceKind>();
  manifest?.sources.forEach((s, i) => {
    if (sourceKinds.has(s.id))
      add(files.manifest, null, `sources[${i}].id`, 'duplicate-id', `source "${s.id}" twice`);
    sourceKinds.set(s.id, s.kind);
  });
  const numbersBySource = new Map<string, number>();
  const cite = (
    file: string,
    row: number | null,
    column: string,
    value: number | null,
    source: string | null,
    what: string,
  ): { value: number; source: string } | null => {
    let ok = true;
    if (value !== null && source === null) {
      add(file, row, column, 'missing-source', `${what} ${value} has no source`);
      ok = false;
    }
    if (value === null && source !== null) {
      add(file, row, column, 'missing-number', `${what}: source "${source}" given but no number`);
      ok = false;
    }
    if (value !== null && !inOpenUnitInterval(value)) {
      add(file, row, column, 'probability-range', `${what} ${value} is outside the open interval (0, 1)`);
      ok = false;
    }
    if (source !== null && manifest !== null && !sourceKinds.has(source)) {
      add(file, row, column, 'unknown-source', `source "${source}" is not listed in kb.json`);
      ok = false;
    }
    if (!ok || value === null || source === null) return null;
    numbersBySource.set(source, (numbersBySource.get(source) ?? 0) + 1);
    return { value, source };
  };

  if (manifest?.leak !== undefined) {
    cite(files.manifest, null, 'leak.default', manifest.leak.default, manifest.leak.source, 'leak default');
  }

  // Conditions.
  const conditionIds = new Set<string>(input.partialIds?.conditions ?? []);
  const scorable: KbCondition[] = [];
  const notScorable: NotScorableCondition[] = [];
  let priorSum = 0;
  input.conditions.forEach((c, i) => {
    const row = lineOf('conditions', i);
    if (conditionIds.has(c.id) && !(input.partialIds?.conditions.has(c.id) ?? false)) {
      add(files.conditions, row, 'id', 'duplicate-id', `condition "${c.id}" is defined twice`);
    }
    conditionIds.add(c.id);
    if (c.icd10 !== null && !ICD10_PATTERN.test(c.icd10)) {
      add(
        files.conditions,
        row,
        'icd10',
        'malformed-code',
        `"${c.icd10}" is not an ICD-10 code (e.g. A15.0)`,
      );
    }
    if (c.prior_locator !== null && c.prior_source === null) {
      add(files.conditions, row, 'prior_locator', 'missing-source', 'a locator without a prior source');
    }
    if (c.prior === null && c.prior_source === null) {
      notScorable.push({ id: c.id, title_en: c.title_en, icd10: c.icd10, reason: 'no sourced prior' });
      return;
    }
    const cited = cite(files.conditions, row, 'prior', c.prior, c.prior_source, 'prior');
    if (cited === null) return;
    priorSum += cited.value;
    scorable.push({
      id: c.id,
      icd10: c.icd10,
      title_en: c.title_en,
      title_vi: c.title_vi,
      prior: cited.value,
      prior_source: cited.source,
      ...(c.prior_locator === null ? {} : { prior_locator: c.prior_locator }),
    });
  });
  if (priorSum >= 1) {
    add(
      files.conditions,
      null,
      'prior',
      'prior-sum',
      `the priors of the scorable conditions add up to ${priorSum}, not below 1 (no mass left for "none of the above")`,
    );
  }

  // Features.
  const featureIds = new Set<string>(input.partialIds?.features ?? []);
  const hpoTerms = new Map<string, string>();
  const features: KbFeature[] = [];
  const perFeature: Record<string, number> = {};
  input.features.forEach((f, i) => {
    const row = lineOf('features', i);
    if (featureIds.has(f.id) && !(input.partialIds?.features.has(f.id) ?? false)) {
      add(files.features, row, 'id', 'duplicate-id', `feature "${f.id}" is defined twice`);
    }
    featureIds.add(f.id);
    if (f.hpo !== null) {
      if (!HPO_ID_PATTERN.test(f.hpo)) {
        add(files.features, row, 'hpo', 'malformed-code', `"${f.hpo}" is not an HPO id (HP: and 7 digits)`);
      } else if (hpoTerms.has(f.hpo)) {
        add(
          files.features,
          row,
          'hpo',
          'duplicate-hpo',
          `${f.hpo} is already the term of feature "${hpoTerms.get(f.hpo) ?? ''}"`,
        );
      } else {
        hpoTerms.set(f.hpo, f.id);
      }
    }
    if (f.leak_locator !== null && f.leak_source === null) {
      add(files.features, row, 'leak_locator', 'missing-source', 'a locator without a leak source');
    }
    if (f.leak !== null || f.leak_source !== null) {
      const cited = cite(files.features, row, 'leak', f.leak, f.leak_source, 'leak');
      if (cited !== null) perFeature[f.id] = cited.value;
    }
    features.push({
      id: f.id,
      kind: f.kind,
      label_en: f.label_en,
      label_vi: f.label_vi,
      hpo: f.hpo,
      synonyms: [...f.synonyms_en, ...f.synonyms_vi],
      ...(f.implies === null ? {} : { implies: f.implies }),
    });
  });
  // What a feature implies must be another feature of the base, and no chain may loop.
  const impliedBy = new Map(
    features.flatMap((f) => (f.implies === undefined ? [] : [[f.id, f.implies] as const])),
  );
  input.features.forEach((f, i) => {
    if (f.implies === null) return;
    const row = lineOf('features', i);
    if (!featureIds.has(f.implies) || f.implies === f.id) {
      add(
        files.features,
        row,
        'implies',
        'unknown-feature',
        `implies "${f.implies}", which is not another feature of the base`,
      );
      return;
    }
    const seen = new Set([f.id]);
    for (let next = impliedBy.get(f.id); next !== undefined; next = impliedBy.get(next)) {
      if (seen.has(next)) {
        add(files.features, row, 'implies', 'bad-value', `"implies" loops back to "${next}"`);
        return;
      }
      seen.add(next);
    }
  });

  // Links.
  const scorableIds = new Set(scorable.map((c) => c.id));
  const linked = new Set<string>();
  const seenLinks = new Map<string, number>();
  const links: KbLink[] = [];
  let dropped = 0;
  input.links.forEach((l, i) => {
    const row = lineOf('links', i);
    let ok = true;
    if (!conditionIds.has(l.condition)) {
      add(
        files.links,
        row,
        'condition',
        'unknown-condition',
        `condition "${l.condition}" is not in conditions.csv`,
      );
      ok = false;
    }
    if (!featureIds.has(l.feature)) {
      add(files.links, row, 'feature', 'unknown-feature', `feature "${l.feature}" is not in features.csv`);
      ok = false;
    }
    const key = `${l.condition}\u0000${l.feature}`;
    const first = seenLinks.get(key);
    if (first !== undefined) {
      add(
        files.links,
        row,
        null,
        'duplicate-id',
        `${l.condition} → ${l.feature} is already linked on line ${first}`,
      );
      ok = false;
    } else {
      seenLinks.set(key, row);
    }
    if (l.locator !== null && l.source === null) {
      add(files.links, row, 'locator', 'missing-source', 'a locator without a source');
    }
    let cited: { value: number; source: string } | null = null;
    if (l.probability === null && l.source === null) {
      add(files.links, row, 'probability', 'missing-number', 'a link needs a probability and its source');
    } else {
      cited = cite(files.links, row, 'probability', l.probability, l.source, 'probability');
    }
    let specificity: number | null = null;
    if (l.specificity !== null) {
      if (!inOpenUnitInterval(l.specificity)) {
        add(
          files.links,
          row,
          'specificity',
          'probability-range',
          `specificity ${l.specificity} is outside the open interval (0, 1)`,
        );
        ok = false;
      } else if (l.source === null) {
        add(files.links, row, 'specificity', 'missing-source', `specificity ${l.specificity} has no source`);
        ok = false;
      } else {
        specificity = l.specificity;
        if (cited !== null) numbersBySource.set(cited.source, (numbersBySource.get(cited.source) ?? 0) + 1);
      }
    }
    if (!ok || cited === null) return;
    if (!scorableIds.has(l.condition)) {
      dropped++;
      return;
    }
    linked.add(l.condition);
    links.push({
      condition: l.condition,
      feature: l.feature,
      probability: cited.value,
      ...(specificity === null ? {} : { specificity }),
      source: cited.source,
      ...(l.locator === null ? {} : { locator: l.locator }),
    });
  });

  if (manifest !== null && manifest.leak === undefined && scorable.length > 0) {
    add(
      files.manifest,
      null,
      'leak',
      'leak-missing',
      `${scorable.length} conditions are scorable but kb.json declares no leak (with its source)`,
    );
  }

  if (manifest === null || problems.length > 0 || input.manifest === null) {
    return { ok: false, knowledgeBase: null, report: null, problems: sortProblems(problems) };
  }

  const sources: KbSource[] = manifest.sources.map((s) => ({
    id: s.id,
    citation: s.citation,
    ...(s.url === undefined ? {} : { url: s.url }),
    ...(s.licence === undefined ? {} : { licence: s.licence }),
  }));
  const leak: KnowledgeBase['leak'] = {
    ...(manifest.leak === undefined
      ? { default: 0, source: NO_LEAK_SOURCE }
      : { default: manifest.leak.default, source: manifest.leak.source }),
    ...(Object.keys(perFeature).length === 0 ? {} : { perFeature }),
  };
  const knowledgeBase: KnowledgeBase = {
    id: manifest.id,
    version: manifest.version,
    sources,
    conditions: scorable,
    features,
    links,
    leak,
  };
  const counts = Object.fromEntries([...numbersBySource].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const report: KbLoadReport = {
    id: manifest.id,
    version: manifest.version,
    sources: sources.length,
    conditions: {
      defined: input.conditions.length,
      scorable: scorable.length,
      notScorable,
      withoutLinks: scorable.filter((c) => !linked.has(c.id)).map((c) => c.id),
    },
    features: features.length,
    links: { defined: input.links.length, used: links.length, dropped },
    priorSum,
    numbersBySource: counts,
    modellingChoices: Object.keys(counts).filter((id) => sourceKinds.get(id) === 'modelling-choice'),
    numbersByGrade: numbersByGrade(counts, sourceKinds),
  };
  return { ok: true, knowledgeBase, report, problems: [] };
}

/** Problems in file order, then line order (file-level ones first), so a list reads top-down. */
export function sortProblems(problems: readonly KbProblem[]): KbProblem[] {
  return problems
    .map((p, i) => ({ p, i }))
    .sort((a, b) => {
      if (a.p.file !== b.p.file) return a.p.file < b.p.file ? -1 : 1;
      const ra = a.p.row ?? 0;
      const rb = b.p.row ?? 0;
      return ra !== rb ? ra - rb : a.i - b.i;
    })
    .map(({ p }) => p);
}

/** Parse and validate in one step: every shape and content problem together. */
export function checkKbTexts(texts: KbTexts, label?: string): KbValidationResult {
  const parsed = parseKbTexts(texts, label);
  const validated = validateKb(parsed, label);
  if (parsed.problems.length === 0) return validated;
  return {
    ok: false,
    knowledgeBase: null,
    report: null,
    problems: sortProblems([...parsed.problems, ...validated.problems]),
  };
}
