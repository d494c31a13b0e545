/**
 * Several knowledge bases as one (pure): e.g. the HPO rare-disease set and the primary-care set.
 *
 * - Sources: united by id; one id with two different citations is a clash.
 * - Conditions: united; one id in two bases is a clash (bases never silently override each other).
 * - Features: two features are the same finding when they carry the same HPO term (or share an id
 *   and the same HPO term). The merged feature keeps the first base's id, kind, labels and leak,
 *   gains the later bases' labels and synonyms as synonyms, and their links are re-pointed to it;
 *   the re-pointings are listed.
 *   One id for two different findings (different or no HPO terms) is a clash.
 * - Leak: the first declared leak is the merged default; a feature of a base whose default
 *   differs keeps its base's value as a per-feature leak, so no feature's leak changes. A base
 *   with no scorable condition declares none and is skipped.
 * - The merged priors must still add up to less than 1.
 */
import type { KbCondition, KbFeature, KbLink, KbSource, KnowledgeBase } from '../domain/types.js';
import type { KbProblem } from './problems.js';
import { NO_LEAK_SOURCE } from './validate.js';

export interface MergeInput {
  /** Names the base in problems (its directory name). */
  readonly label: string;
  readonly knowledgeBase: KnowledgeBase;
}

export interface MergeOptions {
  /** Default: the bases' ids joined with `+`. */
  readonly id?: string;
  /** Default: `id@version` of each base joined with `+`. */
  readonly version?: string;
}

export interface UnifiedFeature {
  readonly label: string;
  readonly from: string;
  readonly into: string;
  readonly hpo: string;
}

export type MergeResult =
  | {
      readonly ok: true;
      readonly knowledgeBase: KnowledgeBase;
      readonly unified: readonly UnifiedFeature[];
      readonly problems: readonly [];
    }
  | {
      readonly ok: false;
      readonly knowledgeBase: null;
      readonly unified: readonly UnifiedFeature[];
      readonly problems: readonly KbProblem[];
    };

const sameSource = (a: KbSource, b: KbSource): boolean =>
  a.citation === b.citation && a.url === b.url && a.licence === b.licence;

export function mergeKnowledgeBases(inputs: readonly MergeInput[], options: MergeOptions = {}): MergeResult {
  const problems: KbProblem[] = [];
  const clash = (label: string, message: string) =>
    problems.push({ file: label, row: null, column: null, code: 'id-clash', message });

  const sources = new Map<string, { source: KbSource; label: string }>();
  const conditions = new Map<string, { condition: KbCondition; label: string }>();
  interface MergedFeature {
    feature: KbFeature;
    label: string;
    synonyms: string[];
  }
  const features = new Map<string, MergedFeature>();
  const byHpo = new Map<string, string>();
  const unified: UnifiedFeature[] = [];
  const links: KbLink[] = [];
  const perFeature: Record<string, number> = {};
  let leak: { default: number; source: string } | null = null;

  for (const { label, knowledgeBase: kb } of inputs) {
    for (const s of kb.sources) {
      const seen = sources.get(s.id);
      if (seen === undefined) sources.set(s.id, { source: s, label });
      else if (!sameSource(seen.source, s)) {
        clash(label, `source "${s.id}" is cited differently in ${seen.label} and ${label}`);
      }
    }
    for (const c of kb.conditions) {
      const seen = conditions.get(c.id);
      if (seen === undefined) conditions.set(c.id, { condition: c, label });
      else clash(label, `condition "${c.id}" is defined in both ${seen.label} and ${label}`);
    }

    const declared = kb.leak.source !== NO_LEAK_SOURCE;
    if (declared && leak === null) leak = { default: kb.leak.default, source: kb.leak.source };
    const rename = new Map<string, string>();
    for (const f of kb.features) {
      const into = f.hpo === null ? undefined : byHpo.get(f.hpo);
      const target = into === undefined ? undefined : features.get(into);
      if (f.hpo !== null && into !== undefined && target !== undefined) {
        for (const s of [f.label_en, ...f.synonyms]) {
          if (s.toLowerCase() !== target.feature.label_en.toLowerCase() && !target.synonyms.includes(s)) {
            target.synonyms.push(s);
          }
        }
        rename.set(f.id, into);
        if (f.id !== into) unified.push({ label, from: f.id, into, hpo: f.hpo });
        continue;
      }
      const sameId = features.get(f.id);
      if (sameId !== undefined) {
        clash(
          label,
          `feature "${f.id}" is defined in both ${sameId.label} and ${label} without one HPO term to show it is one finding`,
        );
        continue;
      }
      features.set(f.id, { feature: f, label, synonyms: [...f.synonyms] });
      if (f.hpo !== null) byHpo.set(f.hpo, f.id);
      rename.set(f.id, f.id);
      const own = kb.leak.perFeature?.[f.id];
      if (own !== undefined) perFeature[f.id] = own;
      else if (declared && leak !== null && kb.leak.default !== leak.default)
        perFeature[f.id] = kb.leak.default;
    }
    for (const l of kb.links) {
      const feature = rename.get(l.feature);
      if (feature === undefined) continue; // its feature clashed: reported above
      links.push(feature === l.feature ? l : { ...l, feature });
    }
  }

  const priorSum = [...conditions.values()].reduce((sum, { condition }) => sum + condition.prior, 0);
  if (priorSum >= 1) {
    problems.push({
      file: inputs.map((i) => i.label).join('+'),
      row: null,
      column: null,
      code: 'prior-sum',
      message: `the merged priors add up to ${priorSum}, not below 1`,
    });
  }
  if (problems.length > 0) return { ok: false, knowledgeBase: null, unified, problems };

  const knowledgeBase: KnowledgeBase = {
    id: options.id ?? inputs.map((i) => i.knowledgeBase.id).join('+'),
    version:
      options.version ?? inputs.map((i) => `${i.knowledgeBase.id}@${i.knowledgeBase.version}`).join('+'),
    sources: [...sources.values()].map((s) => s.source),
    conditions: [...conditions.values()].map((c) => c.condition),
    features: [...features.values()].map(({ feature, synonyms }) =>
      synonyms.length === feature.synonyms.length ? feature : { ...feature, synonyms },
    ),
    links,
    leak:
      leak === null
        ? { default: 0, source: NO_LEAK_SOURCE }
        : { ...leak, ...(Object.keys(perFeature).length === 0 ? {} : { perFeature }) },
  };
  return { ok: true, knowledgeBase, unified, problems: [] };
}
