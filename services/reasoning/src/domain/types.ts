/**
 * The reasoning engine's contract between its parts: the knowledge base (kb/: files in, validated
 * records out), the engine (engine/: a compiled model scored in onnxruntime-node) and the
 * extractor (extract/: free text in, findings out). Every number in a knowledge base carries the id
 * of the source it comes from; there is no number without one.
 */

/** Where numbers come from. */
export interface KbSource {
  /** Stable id that records cite (`hpo-2025-05`, `who-dengue-2009`). */
  readonly id: string;
  /** Full citation: authors or body, title, edition or date. */
  readonly citation: string;
  readonly url?: string;
  readonly licence?: string;
}

export interface KbCondition {
  /** Stable id (`dengue`, `OMIM:143100`). */
  readonly id: string;
  /** ICD-10 code (WHO ICD-10 or ICD-10-CM), when one is known. */
  readonly icd10: string | null;
  readonly title_en: string;
  readonly title_vi: string | null;
  /** Prior probability among patients the knowledge base is meant for (0 < prior < 1). */
  readonly prior: number;
  /** The source of `prior` (a KbSource id), with where in it (`table 2`). */
  readonly prior_source: string;
  readonly prior_locator?: string;
}

export const FEATURE_KINDS = ['symptom', 'sign', 'vital', 'lab', 'history', 'demographic'] as const;
export type FeatureKind = (typeof FEATURE_KINDS)[number];

export interface KbFeature {
  /** Stable id (`fever`, `HP:0001945`). */
  readonly id: string;
  readonly kind: FeatureKind;
  readonly label_en: string;
  readonly label_vi: string | null;
  /** Human Phenotype Ontology term, when the feature is one. */
  readonly hpo: string | null;
  /** Words that name it (en and vi), for the extractor's mapping. */
  readonly synonyms: readonly string[];
  /**
   * A more general feature of the base that this one implies when present (productive cough →
   * cough, right lower quadrant pain → abdominal pain): reported with it, so a condition linked
   * only to the general finding still sees it.
   */
  readonly implies?: string;
}

/** P(feature present | condition), with its source. */
export interface KbLink {
  readonly condition: string;
  readonly feature: string;
  readonly probability: number;
  /**
   * P(feature absent | condition absent) where the source gives it (same source): the link's
   * likelihood ratio is then sens / (1 − specificity) rather than sens / leak.
   */
  readonly specificity?: number;
  readonly source: string;
  readonly locator?: string;
}

export interface KnowledgeBase {
  readonly id: string;
  readonly version: string;
  readonly sources: readonly KbSource[];
  readonly conditions: readonly KbCondition[];
  readonly features: readonly KbFeature[];
  readonly links: readonly KbLink[];
  /**
   * P(feature present | a condition the base does not link it to): the leak. One default with its
   * source, and per-feature values where the source gives them.
   */
  readonly leak: {
    readonly default: number;
    readonly source: string;
    readonly perFeature?: Readonly<Record<string, number>>;
  };
}

/** What the engine scores: observed features, present or absent, with a certainty. */
export interface Finding {
  readonly feature: string;
  readonly present: boolean;
  /** 1 = stated; below 1 = uncertain ("có thể sốt", "possible rash"). */
  readonly certainty: number;
}

export interface RankedCondition {
  readonly condition: string;
  readonly probability: number;
  /** Log-likelihood ratio contribution of each finding (positive: supports). */
  readonly contributions: readonly { readonly feature: string; readonly llr: number }[];
}

export interface EngineResult {
  readonly ranked: readonly RankedCondition[];
  /** Probability mass of "none of the above" (a condition the base does not hold). */
  readonly unknown: number;
  /** Unobserved features that would best discriminate, by expected information gain (bits). */
  readonly nextFindings: readonly { readonly feature: string; readonly gain: number }[];
}
