/**
 * HPO disease annotations → a knowledge-base document (pure; docs/knowledge-base.md, "HPO import").
 *
 * - Conditions: the annotated diseases (OMIM, ORPHA, DECIPHER ids; English names as HPO gives
 *   them). ICD-10: null — the HPO files carry no ICD-10 mapping, and none is invented.
 *   Prior: HPO has no prevalence, so a uniform small prior cited as "uniform (no prevalence
 *   data)", a modelling choice: posteriors among these diseases are only relative.
 * - Features: the HPO terms the kept annotations use (phenotypic abnormalities, aspect P), with the
 *   ontology's names and EXACT synonyms. Alternative ids and obsolete terms with a replacement are
 *   followed to the live term; obsolete terms without one are dropped and listed.
 * - Links: P(term | disease) from the annotation's frequency: fractions (`7/13`) and percentages
 *   as given; HPO's frequency terms at the midpoint of the range HPO defines for them (the
 *   definitions are checked against the ontology file); 0 and 1 clamped into (0, 1) by
 *   HPO_EPSILON; NOT annotations (stated absent) at HPO_EPSILON; annotations without a frequency
 *   at a documented default cited as "HPO annotation without frequency, ClinicalSuite default".
 *   Several rows for one disease and term: counts pooled, else percentages or terms averaged.
 */
import type { HpoaRow } from './hpoa.js';
import { parseHpoa } from './hpoa.js';
import { parseObo, resolveTerm, type OboOntology, type OboTerm } from './obo.js';
import {
  KB_FORMAT,
  type ConditionRow,
  type FeatureRow,
  type KbDocument,
  type KbSourceFile,
  type LinkRow,
} from './schema.js';

/** How far 0 and 1 are pulled into the open interval (0, 1): a modelling choice. */
export const HPO_EPSILON = 0.001;
/** P(term | disease) for an annotation without a frequency: a modelling choice, not a clinical number. */
export const HPO_NO_FREQUENCY_DEFAULT = 0.5;
/**
 * Each disease's prior when no prevalence is known: a modelling choice, the same for every disease.
 * Small enough that the whole release (12,680 diseases: 0.025) fits beside a base that gives its
 * own conditions up to 0.95, as the shipped primary-care base does: merged priors must stay below 1.
 */
export const HPO_UNIFORM_PRIOR = 2e-6;
/** P(term | a disease not annotated with it): a modelling choice. */
export const HPO_DEFAULT_LEAK = 0.01;

export const UNIFORM_PRIOR_SOURCE = 'uniform (no prevalence data)';
export const HPO_NO_FREQUENCY_SOURCE = 'hpo-no-frequency-default';
export const HPO_LEAK_SOURCE = 'clinicalsuite-leak-default';

export interface HpoFrequencyTerm {
  readonly name: string;
  /** The term's definition in hp.obo, checked at import. */
  readonly definition: string;
  readonly low: number;
  readonly high: number;
}

/**
 * HPO's frequency terms (subclasses of HP:0040279 Frequency) with the ranges their definitions in
 * hp.obo (release 2025-01-16) state. The point value used is the midpoint of the range.
 */
export const HPO_FREQUENCY_TERMS: Readonly<Record<string, HpoFrequencyTerm>> = {
  'HP:0040280': {
    name: 'Obligate',
    definition: 'Always present, i.e. in 100% of the cases.',
    low: 1,
    high: 1,
  },
  'HP:0040281': {
    name: 'Very frequent',
    definition: 'Present in 80% to 99% of the cases.',
    low: 0.8,
    high: 0.99,
  },
  'HP:0040282': { name: 'Frequent', definition: 'Present in 30% to 79% of the cases.', low: 0.3, high: 0.79 },
  'HP:0040283': {
    name: 'Occasional',
    definition: 'Present in 5% to 29% of the cases.',
    low: 0.05,
    high: 0.29,
  },
  'HP:0040284': { name: 'Very rare', definition: 'Present in 1% to 4% of the cases.', low: 0.01, high: 0.04 },
  'HP:0040285': { name: 'Excluded', definition: 'Present in 0% of the cases.', low: 0, high: 0 },
};

export class HpoImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HpoImportError';
  }
}

/** Mismatches between HPO_FREQUENCY_TERMS and the ontology file (empty when they agree). */
export function checkFrequencyTerms(ontology: OboOntology): string[] {
  const out: string[] = [];
  for (const [id, expected] of Object.entries(HPO_FREQUENCY_TERMS)) {
    const term = ontology.terms.get(id);
    if (term === undefined) out.push(`${id} (${expected.name}) is not in the ontology file`);
    else if (term.obsolete) out.push(`${id} (${expected.name}) is obsolete in the ontology file`);
    else if (term.name !== expected.name || term.definition !== expected.definition) {
      out.push(
        `${id} reads "${term.name}: ${term.definition ?? ''}" in the ontology file, not "${expected.name}: ${expected.definition}"`,
      );
    }
  }
  return out;
}

export interface HpoImportOptions {
  /** Keep only these diseases (ids as in phenotype.hpoa); default: all. */
  readonly diseases?: ReadonlySet<string>;
  /** The base's id; default `hpo-<annotation version>`. */
  readonly id?: string;
  /** The base's version; default the annotation file's `#version`. */
  readonly version?: string;
}

export interface HpoImportReport {
  readonly annotationVersion: string | null;
  readonly ontologyVersion: string | null;
  readonly rows: number;
  /** Rows read per aspect (only P becomes links). */
  readonly rowsByAspect: Readonly<Record<string, number>>;
  readonly diseases: number;
  readonly features: number;
  readonly links: number;
  /** Links by how their probability was obtained. */
  readonly linksBy: {
    readonly fraction: number;
    readonly percentage: number;
    readonly frequencyTerm: number;
    readonly noFrequency: number;
    readonly negated: number;
  };
  /** Links made of several annotation rows. */
  readonly pooled: number;
  /** Links whose value (0 or 1) was clamped into (0, 1). */
  readonly clamped: number;
  /** NOT rows ignored because other rows annotate the same term as present. */
  readonly negatedOverridden: number;
  readonly unparsedFrequencies: readonly { readonly line: number; readonly frequency: string }[];
  readonly terms: {
    readonly viaAltId: number;
    readonly viaReplacedBy: number;
    /** Obsolete without replacement, or not in the ontology: their rows are dropped. */
    readonly dropped: readonly {
      readonly id: string;
      readonly reason: 'obsolete' | 'unknown';
      readonly consider: readonly string[];
    }[];
  };
  /** Requested diseases the file does not annotate. */
  readonly missingDiseases: readonly string[];
  /** Diseases with no phenotype annotation left (only inheritance, onset…): not included. */
  readonly withoutPhenotypes: readonly string[];
  readonly fileProblems: readonly { readonly line: number; readonly message: string }[];
}

export interface HpoImportResult {
  readonly document: KbDocument;
  readonly report: HpoImportReport;
}

const round = (p: number): number => Number(p.toPrecision(6));
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const percent = (p: number): string => `${round(p * 100)}%`;

type Parsed =
  | { kind: 'fraction'; n: number; d: number }
  | { kind: 'percentage'; value: number }
  | { kind: 'term'; id: string; term: HpoFrequencyTerm }
  | { kind: 'none' }
  | { kind: 'unparsed' };

function parseFrequency(raw: string): Parsed {
  if (raw === '') return { kind: 'none' };
  const fraction = /^(\d+)\/(\d+)$/.exec(raw);
  if (fraction !== null) {
    const n = Number(fraction[1]);
    const d = Number(fraction[2]);
    return d > 0 && n <= d ? { kind: 'fraction', n, d } : { kind: 'unparsed' };
  }
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(raw);
  if (pct !== null) {
    const value = Number(pct[1]) / 100;
    return value <= 1 ? { kind: 'percentage', value } : { kind: 'unparsed' };
  }
  const term = HPO_FREQUENCY_TERMS[raw];
  if (term !== undefined) return { kind: 'term', id: raw, term };
  return { kind: 'unparsed' };
}

interface Group {
  readonly disease: string;
  readonly term: string;
  readonly rows: HpoaRow[];
}

interface LinkValue {
  readonly value: number;
  readonly source: 'hpo' | 'default';
  readonly kind: keyof HpoImportReport['linksBy'];
  readonly asGiven: string | null;
  readonly notes: string[];
}

function combine(rows: readonly HpoaRow[], unparsed: { line: number; frequency: string }[]): LinkValue {
  const tagged = (r: HpoaRow, text: string) => (r.sex === '' ? text : `${text} (${r.sex})`);
  const positives = rows.filter((r) => !r.negated);
  if (positives.length === 0) {
    return {
      value: HPO_EPSILON,
      source: 'hpo',
      kind: 'negated',
      asGiven: 'NOT',
      notes: [`NOT annotation (stated absent): epsilon ${HPO_EPSILON}`],
    };
  }
  const fractions: { r: HpoaRow; n: number; d: number }[] = [];
  const percentages: { r: HpoaRow; value: number }[] = [];
  const terms: { r: HpoaRow; id: string; term: HpoFrequencyTerm }[] = [];
  for (const r of positives) {
    const f = parseFrequency(r.frequency);
    if (f.kind === 'fraction') fractions.push({ r, n: f.n, d: f.d });
    else if (f.kind === 'percentage') percentages.push({ r, value: f.value });
    else if (f.kind === 'term') terms.push({ r, id: f.id, term: f.term });
    else if (f.kind === 'unparsed') unparsed.push({ line: r.line, frequency: r.frequency });
  }
  if (fractions.length > 0) {
    const n = fractions.reduce((s, f) => s + f.n, 0);
    const d = fractions.reduce((s, f) => s + f.d, 0);
    return {
      value: n / d,
      source: 'hpo',
      kind: 'fraction',
      asGiven: fractions.map((f) => tagged(f.r, `${f.n}/${f.d}`)).join('; '),
      notes: fractions.length > 1 ? [`${fractions.length} cohorts pooled: ${n}/${d}`] : [],
    };
  }
  if (percentages.length > 0) {
    const mean = percentages.reduce((s, p) => s + p.value, 0) / percentages.length;
    return {
      value: mean,
      source: 'hpo',
      kind: 'percentage',
      asGiven: percentages.map((p) => tagged(p.r, p.r.frequency)).join('; '),
      notes: percentages.length > 1 ? [`mean of ${percentages.length} percentages`] : [],
    };
  }
  if (terms.length > 0) {
    const mids = terms.map((t) => (t.term.low + t.term.high) / 2);
    const distinct = new Map(terms.map((t) => [t.id, t.term]));
    return {
      value: mids.reduce((s, m) => s + m, 0) / mids.length,
      source: 'hpo',
      kind: 'frequencyTerm',
      asGiven: terms.map((t) => tagged(t.r, `${t.id} ${t.term.name}`)).join('; '),
      notes: [...distinct].map(([id, t]) => {
        return t.low === t.high
          ? `${id} ${t.name} = ${percent(t.low)}`
          : `${id} ${t.name} = ${percent(t.low)}-${percent(t.high)}, midpoint ${percent((t.low + t.high) / 2)}`;
      }),
    };
  }
  return {
    value: HPO_NO_FREQUENCY_DEFAULT,
    source: 'default',
    kind: 'noFrequency',
    asGiven: null,
    notes: ['HPO annotation without frequency'],
  };
}

function synonymsOf(term: OboTerm): string[] {
  const seen = new Set([term.name.toLowerCase()]);
  const out: string[] = [];
  for (const s of term.synonyms) {
    if (s.scope !== 'EXACT' || s.type === 'obsolete_synonym') continue;
    const key = s.text.toLowerCase();
    if (seen.has(key) || s.text.includes('|')) continue;
    seen.add(key);
    out.push(s.text);
  }
  return out;
}

/** The sources an HPO import cites: the release itself and the three documented defaults. */
export function hpoSources(annotationVersion: string, ontologyVersion: string | null): KbSourceFile[] {
  return [
    {
      id: `hpo-${annotationVersion}`,
      kind: 'ontology',
      citation:
        `Human Phenotype Ontology Consortium. HPO disease annotations (phenotype.hpoa, version ${annotationVersion}) ` +
        `and ontology (hp.obo, ${ontologyVersion ?? 'version not stated'}). Köhler S, et al. The Human Phenotype ` +
        'Ontology project: linking molecular biology and disease through phenotype data. Nucleic Acids Res. ' +
        '2014;42(D1):D966-D974. doi:10.1093/nar/gkt1026',
      url: 'https://hpo.jax.org/',
      licence:
        `HPO licence (https://hpo.jax.org/app/license). This product is using the Human Phenotype Ontology ` +
        `(version ${annotationVersion}). Find out more at http://www.human-phenotype-ontology.org`,
    },
    {
      id: HPO_NO_FREQUENCY_SOURCE,
      kind: 'modelling-choice',
      citation:
        `HPO annotation without frequency, ClinicalSuite default: P = ${HPO_NO_FREQUENCY_DEFAULT} (as likely ` +
        'present as absent). A modelling choice, not a clinical number (services/reasoning/docs/knowledge-base.md)',
    },
    {
      id: UNIFORM_PRIOR_SOURCE,
      kind: 'modelling-choice',
      citation:
        `Uniform prior ${HPO_UNIFORM_PRIOR} per disease: HPO annotations carry no prevalence and none was ` +
        'available here. A modelling choice, not a prevalence: posteriors among these diseases are only relative ' +
        '(services/reasoning/docs/knowledge-base.md)',
    },
    {
      id: HPO_LEAK_SOURCE,
      kind: 'modelling-choice',
      citation:
        `Leak ${HPO_DEFAULT_LEAK}: P(term present | a disease HPO does not annotate with it), ClinicalSuite ` +
        'default. A modelling choice, not a clinical number (services/reasoning/docs/knowledge-base.md)',
    },
  ];
}

/** Imports phenotype.hpoa + hp.obo text as a knowledge-base document. */
export function importHpo(
  hpoaText: string,
  oboText: string,
  options: HpoImportOptions = {},
): HpoImportResult {
  const ontology = parseObo(oboText);
  const mismatches = checkFrequencyTerms(ontology);
  if (mismatches.length > 0) {
    throw new HpoImportError(
      `the ontology's frequency terms differ from the values this importer uses (update HPO_FREQUENCY_TERMS and the docs):\n${mismatches.join('\n')}`,
    );
  }
  const hpoa = parseHpoa(hpoaText);
  const annotationVersion = hpoa.header['version'] ?? null;
  if (annotationVersion === null) throw new HpoImportError('phenotype.hpoa has no "#version:" header line');
  if (hpoa.rows.length === 0) {
    throw new HpoImportError(
      `phenotype.hpoa holds no annotation${hpoa.problems[0] ? `: ${hpoa.problems[0].message}` : ''}`,
    );
  }
  const hpoSourceId = `hpo-${annotationVersion}`;

  const rowsByAspect: Record<string, number> = {};
  const names = new Map<string, string>();
  const groups = new Map<string, Group>();
  const termCache = new Map<string, OboTerm>();
  let viaAltId = 0;
  let viaReplacedBy = 0;
  const dropped = new Map<
    string,
    { id: string; reason: 'obsolete' | 'unknown'; consider: readonly string[] }
  >();
  const seenDiseases = new Set<string>();
  for (const row of hpoa.rows) {
    if (options.diseases !== undefined && !options.diseases.has(row.databaseId)) continue;
    seenDiseases.add(row.databaseId);
    rowsByAspect[row.aspect] = (rowsByAspect[row.aspect] ?? 0) + 1;
    if (!names.has(row.databaseId)) names.set(row.databaseId, row.diseaseName);
    if (row.aspect !== 'P') continue;
    const resolved = resolveTerm(ontology, row.hpoId);
    if (resolved.via === 'alt_id') viaAltId++;
    if (resolved.via === 'replaced_by') viaReplacedBy++;
    if (resolved.term === null) {
      dropped.set(row.hpoId, {
        id: row.hpoId,
        reason: resolved.via === 'unknown' ? 'unknown' : 'obsolete',
        consider: ontology.terms.get(row.hpoId)?.consider ?? [],
      });
      continue;
    }
    termCache.set(resolved.term.id, resolved.term);
    const key = `${row.databaseId}\u0000${resolved.term.id}`;
    let group = groups.get(key);
    if (group === undefined) {
      group = { disease: row.databaseId, term: resolved.term.id, rows: [] };
      groups.set(key, group);
    }
    group.rows.push(row);
  }

  const unparsedFrequencies: { line: number; frequency: string }[] = [];
  const linksBy = { fraction: 0, percentage: 0, frequencyTerm: 0, noFrequency: 0, negated: 0 };
  let pooled = 0;
  let clamped = 0;
  let negatedOverridden = 0;
  const links: LinkRow[] = [];
  const linkedDiseases = new Set<string>();
  for (const g of groups.values()) {
    const v = combine(g.rows, unparsedFrequencies);
    linksBy[v.kind]++;
    if (v.kind !== 'negated') negatedOverridden += g.rows.filter((r) => r.negated).length;
    if (g.rows.length > 1) pooled++;
    let value = v.value;
    const notes = [...v.notes];
    if (value < HPO_EPSILON || value > 1 - HPO_EPSILON) {
      value = value < HPO_EPSILON ? HPO_EPSILON : 1 - HPO_EPSILON;
      clamped++;
      notes.push(`clamped to ${round(value)} (epsilon ${HPO_EPSILON})`);
    }
    const references = [
      ...new Set(g.rows.flatMap((r) => r.reference.split(';').map((s) => s.trim()))),
    ].filter((s) => s !== '');
    if (v.source === 'default' && references.length > 0) notes.push(`annotated by ${references.join('; ')}`);
    links.push({
      condition: g.disease,
      feature: g.term,
      probability: round(value),
      specificity: null,
      source: v.source === 'hpo' ? hpoSourceId : HPO_NO_FREQUENCY_SOURCE,
      locator: v.source === 'hpo' ? `phenotype.hpoa: ${references.join('; ')}` : null,
      as_given: v.asGiven,
      notes: notes.length === 0 ? null : notes.join('; '),
    });
    linkedDiseases.add(g.disease);
  }
  links.sort((a, b) => compare(a.condition, b.condition) || compare(a.feature, b.feature));

  const conditions: ConditionRow[] = [...linkedDiseases].sort(compare).map((id) => ({
    id,
    icd10: null,
    title_en: names.get(id) ?? id,
    title_vi: null,
    prior: HPO_UNIFORM_PRIOR,
    prior_source: UNIFORM_PRIOR_SOURCE,
    prior_locator: null,
    notes: null,
  }));
  const features: FeatureRow[] = [...termCache]
    .sort(([a], [b]) => compare(a, b))
    .map(([id, term]) => {
      return {
        id,
        kind: 'sign',
        label_en: term.name,
        label_vi: null,
        hpo: id,
        synonyms_en: synonymsOf(term),
        synonyms_vi: [],
        leak: null,
        leak_source: null,
        leak_locator: null,
        implies: null,
        notes: null,
      };
    });

  const subset = options.diseases === undefined ? '' : ` (a subset of ${conditions.length} diseases)`;
  const document: KbDocument = {
    manifest: {
      format: KB_FORMAT,
      id: options.id ?? `hpo-${annotationVersion}`,
      version: options.version ?? annotationVersion,
      title: `Human Phenotype Ontology disease annotations, release ${annotationVersion}${subset}`,
      description:
        'Imported by services/reasoning/tools/hpo-import.ts from phenotype.hpoa and hp.obo. Priors are uniform ' +
        '(no prevalence data): posteriors among these diseases are only relative. ICD-10 codes: none in the HPO files.',
      sources: hpoSources(annotationVersion, ontology.dataVersion),
      leak: {
        default: HPO_DEFAULT_LEAK,
        source: HPO_LEAK_SOURCE,
      },
    },
    conditions,
    features,
    links,
  };
  const report: HpoImportReport = {
    annotationVersion,
    ontologyVersion: ontology.dataVersion,
    rows: Object.values(rowsByAspect).reduce((s, n) => s + n, 0),
    rowsByAspect,
    diseases: conditions.length,
    features: features.length,
    links: links.length,
    linksBy,
    pooled,
    clamped,
    negatedOverridden,
    unparsedFrequencies,
    terms: { viaAltId, viaReplacedBy, dropped: [...dropped.values()] },
    missingDiseases:
      options.diseases === undefined
        ? []
        : [...options.diseases].filter((d) => !seenDiseases.has(d)).sort(compare),
    withoutPhenotypes: [...seenDiseases].filter((d) => !linkedDiseases.has(d)).sort(compare),
    fileProblems: hpoa.problems,
  };
  return { document, report };
}
