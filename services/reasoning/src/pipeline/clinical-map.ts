/**
 * The clinical map (layer 2, with the code lookup): findings as the extractor and the client
 * give them, turned into the knowledge base's features.
 *
 * - An extracted symptom, sign or history item maps by the feature id its lexicon entry carries
 *   (the rule pass's lexicon is built from the base's features), else by its normalised name or its
 *   words against the features' ids, labels and synonyms (case and diacritics folded).
 * - A measured vital or lab maps to the base's feature for the abnormality it defines (temperature
 *   → fever, systolic pressure → hypotension, …) by the published cut-offs of cut-offs.ts, each
 *   with its source; a reading that does not meet the cut-off is that feature absent. A cut-off
 *   applies only where the base holds the feature (by HPO term, else by id). Implausible readings
 *   are not used.
 * - A structured finding names a feature by id or by one of its labels or synonyms (en/vi); an
 *   unknown name is a 422 listing close matches.
 * - Age, sex and the illness's longest stated duration become the base's age band, sex and
 *   `illness_2_weeks_or_more` features (demographics.ts) where the base holds them; otherwise
 *   they are reported as not used.
 *
 * Pure: no I/O, no clock.
 */
import { ValidationError, type FieldIssue } from '@clinicalsuite/kit';
import type { Finding, KbFeature } from '../domain/types.js';
import { BASE_LEXICON, type ExtractedFinding, type LexiconEntry } from '../extract/index.js';
import { foldTerm } from '../extract/text.js';
import { CloseMatchIndex } from './close-matches.js';
import { ID_THRESHOLDS, meets, THRESHOLDS } from './cut-offs.js';
import {
  ageBandFeature,
  durationDays,
  LONG_ILLNESS_FEATURE,
  longIllness,
  sexEvidence,
} from './demographics.js';

export interface Span {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** A finding the engine scores, as the response lists it (codes are added by the code lookup). */
export interface MappedFinding {
  readonly feature: string;
  readonly label_en: string;
  readonly label_vi: string | null;
  readonly present: boolean;
  readonly certainty: number;
  readonly origin: 'rules' | 'llm' | 'structured';
  readonly span: Span | null;
  readonly value: number | null;
  readonly unit: string | null;
}

export interface Unmapped {
  readonly text: string;
  readonly span: Span;
  /** Why it was not used (implausible value, no such feature in the base). */
  readonly reason: string;
}

export interface StructuredInput {
  readonly feature: string;
  readonly present: boolean;
  readonly certainty: number;
}

const SEX_TERMS: Readonly<Record<'male' | 'female', readonly string[]>> = {
  male: ['male', 'nam', 'man', 'men'],
  female: ['female', 'nu', 'woman', 'women'],
};

export interface CloseMatch {
  readonly feature: string;
  readonly label_en: string;
}

/** The base's features by every name they go by (folded), for mapping and close matches. */
export class FeatureIndex {
  readonly #byTerm = new Map<string, string>();
  readonly #byHpo = new Map<string, string>();
  readonly #terms: { folded: string; feature: string }[] = [];
  /** The terms indexed for close matches (built with the base, not per unknown name). */
  readonly #close: CloseMatchIndex;
  /** The extractor's built-in terms (vi/en) → their normalised English name. */
  readonly #lexicon = new Map<string, string>();
  /** A normalised name → every folded term of its lexicon entry ("neck stiffness" → "nuchal rigidity"…). */
  readonly #entryTerms = new Map<string, string[]>();
  /** The demographic features' ids (never suggested as a next finding). */
  readonly demographics: ReadonlySet<string>;

  constructor(
    readonly features: ReadonlyMap<string, KbFeature>,
    lexicon: readonly LexiconEntry[] = BASE_LEXICON,
  ) {
    for (const entry of lexicon) {
      const terms = this.#entryTerms.get(entry.name) ?? [];
      for (const term of [entry.name, ...entry.terms]) {
        const folded = foldTerm(term);
        if (folded === '') continue;
        if (!this.#lexicon.has(folded)) this.#lexicon.set(folded, entry.name);
        terms.push(folded);
      }
      this.#entryTerms.set(entry.name, terms);
    }
    this.demographics = new Set(
      [...features.values()].filter((f) => f.kind === 'demographic').map((f) => f.id),
    );
    for (const f of features.values()) {
      if (f.hpo !== null && !this.#byHpo.has(f.hpo)) this.#byHpo.set(f.hpo, f.id);
      const names = [
        f.id,
        f.id.replace(/_/g, ' '),
        f.label_en,
        ...(f.label_vi === null ? [] : [f.label_vi]),
        ...f.synonyms,
      ];
      for (const name of names) {
        const folded = foldTerm(name);
        if (folded === '') continue;
        if (!this.#byTerm.has(folded)) {
          this.#byTerm.set(folded, f.id);
          this.#terms.push({ folded, feature: f.id });
        }
      }
    }
    this.#close = new CloseMatchIndex(this.#terms);
  }

  /**
   * The feature named exactly: its id, then its labels and synonyms (folded), then a term of the
   * extractor's lexicon whose entry (its normalised name or another of its terms) is one of those
   * ("SOB", "khó thở" → dyspnea; "stiff neck" → nuchal rigidity).
   */
  lookup(name: string): KbFeature | undefined {
    const direct = this.features.get(name);
    if (direct !== undefined) return direct;
    const folded = foldTerm(name);
    const id = this.#byTerm.get(folded);
    if (id !== undefined) return this.features.get(id);
    const normalised = this.#lexicon.get(folded);
    if (normalised === undefined) return undefined;
    // The entry's own name first, then any other of its terms the base knows ("neck stiffness" is
    // the base's "Nuchal rigidity" through the entry's "nuchal rigidity").
    for (const term of [foldTerm(normalised), ...(this.#entryTerms.get(normalised) ?? [])]) {
      const viaLexicon = this.#byTerm.get(term);
      if (viaLexicon !== undefined) return this.features.get(viaLexicon);
    }
    return undefined;
  }

  byHpoOrId(hpo: string, id: string): KbFeature | undefined {
    const viaHpo = this.#byHpo.get(hpo);
    return this.features.get(viaHpo ?? id);
  }

  /**
   * Features whose names are closest to `name` (edit distance, containment), at most `limit`
   * (close-matches.ts).
   */
  closeMatches(name: string, limit = 5): CloseMatch[] {
    return this.#close
      .search(foldTerm(name), limit)
      .map(({ feature }) => ({ feature, label_en: this.features.get(feature)?.label_en ?? feature }));
  }

  /** A demographic feature for a sex, if the base has one. */
  sexFeature(sex: 'male' | 'female'): KbFeature | undefined {
    for (const term of SEX_TERMS[sex]) {
      const f = this.lookup(term);
      if (f?.kind === 'demographic') return f;
    }
    return undefined;
  }
}

function spanOf(f: ExtractedFinding): Span {
  return { start: f.start, end: f.end, text: f.text };
}

/** A finding of `feature`, labelled as the base labels it. */
export function mapped(
  feature: KbFeature,
  fields: Omit<MappedFinding, 'feature' | 'label_en' | 'label_vi'>,
): MappedFinding {
  return {
    feature: feature.id,
    label_en: feature.label_en,
    label_vi: feature.label_vi,
    ...fields,
  };
}

export interface ExtractedMapping {
  readonly findings: MappedFinding[];
  readonly unmapped: Unmapped[];
  readonly warnings: string[];
}

/** Extracted findings to features (see the module's comment). */
export function mapExtracted(index: FeatureIndex, extracted: readonly ExtractedFinding[]): ExtractedMapping {
  const findings: MappedFinding[] = [];
  const unmapped: Unmapped[] = [];
  const warnings: string[] = [];
  let ageSeen = false;
  let sexSeen = false;
  let longestDays = -1;
  let longestSpan: Span | null = null;
  let longestOrigin: MappedFinding['origin'] = 'rules';
  for (const f of extracted) {
    const span = spanOf(f);
    const origin = f.source;
    if (f.kind === 'vital' || f.kind === 'lab') {
      if (f.implausible !== undefined) {
        unmapped.push({ text: f.text, span, reason: `not used: ${f.implausible}` });
        warnings.push(`"${f.text}" was not used: ${f.implausible}`);
        continue;
      }
      const rules = [...THRESHOLDS, ...ID_THRESHOLDS].filter((t) => t.measurement === f.name);
      if (rules.length > 0 && f.value !== undefined) {
        let used = false;
        for (const t of rules) {
          const feature = index.byHpoOrId(t.hpo, t.id);
          if (feature === undefined || f.unit !== t.unit) continue;
          used = true;
          findings.push(
            mapped(feature, {
              present: meets(t, f.value),
              certainty: f.certainty,
              origin,
              span,
              value: f.value,
              unit: f.unit,
            }),
          );
        }
        if (!used)
          unmapped.push({
            text: f.text,
            span,
            reason: 'no feature of the knowledge base for this measurement',
          });
        continue;
      }
    }
    if (f.kind === 'demographic' || f.kind === 'duration') {
      let evidence: { feature: KbFeature; present: boolean } | undefined;
      let value: number | null = null;
      let unit: string | null = null;
      if (f.kind === 'demographic' && (f.name === 'male' || f.name === 'female')) {
        if (!sexSeen) evidence = sexEvidence(index, f.name);
        sexSeen = true;
      } else if (f.kind === 'demographic' && f.name === 'age' && f.value !== undefined) {
        // The first age the text states is the patient's ("her mother, 60, …" comes later).
        const band = ageSeen ? undefined : ageBandFeature(index, f.value);
        ageSeen = true;
        if (band !== undefined) evidence = { feature: band, present: true };
        value = f.value;
        unit = f.unit ?? null;
      } else if (f.kind === 'duration' && f.value !== undefined) {
        const days = durationDays(f.valueHigh ?? f.value, f.unit);
        if (days !== undefined && days > longestDays) {
          longestDays = days;
          longestSpan = span;
          longestOrigin = origin;
        }
        if (days !== undefined && index.features.has(LONG_ILLNESS_FEATURE)) continue;
      }
      if (evidence === undefined) {
        unmapped.push({
          text: f.text,
          span,
          reason: `no ${f.kind} feature in the knowledge base for ${f.name}`,
        });
      } else {
        findings.push(
          mapped(evidence.feature, {
            present: evidence.present,
            certainty: f.certainty,
            origin,
            span,
            value,
            unit,
          }),
        );
      }
      continue;
    }
    const feature =
      (f.feature === undefined ? undefined : index.features.get(f.feature)) ??
      index.lookup(f.name) ??
      index.lookup(f.text);
    if (feature === undefined) {
      unmapped.push({ text: f.text, span, reason: `no feature of the knowledge base is named "${f.name}"` });
      continue;
    }
    findings.push(
      mapped(feature, {
        present: f.present,
        certainty: f.certainty,
        origin,
        span,
        value: f.value ?? null,
        unit: f.unit ?? null,
      }),
    );
  }
  if (longestSpan !== null) {
    const long = longIllness(index, longestDays);
    if (long !== undefined) {
      findings.push(
        mapped(long.feature, {
          present: long.present,
          certainty: 1,
          origin: longestOrigin,
          span: longestSpan,
          value: Math.round(longestDays * 10) / 10,
          unit: 'day',
        }),
      );
    }
  }
  return { findings, unmapped, warnings };
}

/**
 * The findings with the more general ones they imply (a feature's `implies`, followed up the chain):
 * "ho có đờm" (productive cough) is a cough too, for the conditions the base links to cough only.
 * An implied finding is added only where nothing reported its feature; it keeps the implying
 * finding's certainty, origin and span. Absence implies nothing.
 */
export function withImplied(index: FeatureIndex, findings: readonly MappedFinding[]): MappedFinding[] {
  const out = [...findings];
  const reported = new Set(findings.map((f) => f.feature));
  for (const f of findings) {
    if (!f.present) continue;
    for (let id = index.features.get(f.feature)?.implies; id !== undefined;) {
      const parent = index.features.get(id);
      if (parent === undefined || reported.has(id)) break;
      reported.add(id);
      const { present, certainty, origin, span } = f;
      out.push(mapped(parent, { present, certainty, origin, span, value: null, unit: null }));
      id = parent.implies;
    }
  }
  return out;
}

/** Structured findings to features; every unknown name at once as a 422 with close matches. */
export function mapStructured(index: FeatureIndex, input: readonly StructuredInput[]): MappedFinding[] {
  const issues: FieldIssue[] = [];
  const out: MappedFinding[] = [];
  input.forEach((s, i) => {
    const feature = index.lookup(s.feature);
    if (feature === undefined) {
      const close = index.closeMatches(s.feature);
      const listed =
        close.length === 0
          ? 'no close match'
          : `close matches: ${close.map((c) => `${c.feature} (${c.label_en})`).join(', ')}`;
      issues.push({
        loc: ['body', 'findings', i, 'feature'],
        msg: `unknown feature ${JSON.stringify(s.feature)}: not an id, label or synonym in the knowledge base; ${listed}`,
        type: 'value_error.unknown_feature',
      });
      return;
    }
    out.push(
      mapped(feature, {
        present: s.present,
        certainty: s.certainty,
        origin: 'structured',
        span: null,
        value: null,
        unit: null,
      }),
    );
  });
  if (issues.length > 0) throw new ValidationError(issues);
  return out;
}

/** The engine's input: every mapped finding (the engine keeps the most certain per feature). */
export function engineFindings(findings: readonly MappedFinding[]): Finding[] {
  return findings.map((f) => ({ feature: f.feature, present: f.present, certainty: f.certainty }));
}
