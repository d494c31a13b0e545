/**
 * What the extractor produces: raw findings, each tied to the characters of the input it was read
 * from. Mapping a finding's `name` to a knowledge-base feature id (domain/types.ts `Finding`) is the
 * clinical map's job, not the extractor's.
 */

export const EXTRACTED_KINDS = [
  'symptom',
  'sign',
  'vital',
  'lab',
  'history',
  'demographic',
  'duration',
] as const;
export type ExtractedKind = (typeof EXTRACTED_KINDS)[number];

export type FindingSource = 'rules' | 'llm';

/** A value in a unit, as numbers (`{ value: 102, unit: '°F' }`). */
export interface Quantity {
  readonly value: number;
  readonly unit: string;
}

export interface ExtractedFinding {
  /** The span as written: always `input.slice(start, end)`. */
  readonly text: string;
  /** UTF-16 offsets into the input. */
  readonly start: number;
  readonly end: number;
  readonly kind: ExtractedKind;
  /**
   * Normalised English name, lower case: `fever`, `chest pain`, `temperature`, `systolic blood
   * pressure`, `glucose`, `age`, `male`, `duration`.
   */
  readonly name: string;
  /** False when the text says it is absent ("không sốt", "denies chest pain"). */
  readonly present: boolean;
  /** 1 when stated; lower when hedged (see `CERTAINTY` in negation.ts for the values). */
  readonly certainty: number;
  /**
   * Vitals, labs, age, duration: the value in the normalised unit. Normalised units: °C, mmHg,
   * bpm, /min, % (SpO2, HbA1c), kg, cm, kg/m2, 10^9/L (cell counts), g/dL (haemoglobin), mg/L
   * (CRP), year (age); glucose (mg/dL or mmol/L) and creatinine (µmol/L or mg/dL) stay in the unit
   * written, with the other in `converted`; duration in minute, hour, day, week, month or year. A
   * lab written without a unit has `value` and no `unit`.
   */
  readonly value?: number;
  readonly unit?: string;
  /** The upper end of a range ("2-3 ngày"): `value` is the lower end. */
  readonly valueHigh?: number;
  /** The value and unit as written, when `value`/`unit` were converted from them. */
  readonly written?: Quantity;
  /** Glucose and creatinine: the value in the other conventional unit. */
  readonly converted?: Quantity;
  /** The unit was not written and was inferred from the quantity (pulse "mạch 90" → bpm). */
  readonly unitInferred?: true;
  /**
   * Set when the value is physiologically impossible (a typo or a unit error): the reading is
   * kept for the reader but must not be used as an observation. The message says why.
   */
  readonly implausible?: string;
  /**
   * The knowledge-base feature id, when a lexicon entry that carries one (`lexiconFromFeatures`)
   * found the finding. Otherwise the clinical map maps `name`.
   */
  readonly feature?: string;
  /** Where the finding came from. */
  readonly source: FindingSource;
  /** The cues that set `present`, `certainty` or the history kind, as input ranges. */
  readonly cues?: readonly FindingCue[];
}

export interface FindingCue {
  readonly role: 'negation' | 'uncertainty' | 'history' | 'family';
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

/** A term list the rule pass finds in text (built-in, or the knowledge base's synonyms). */
export interface LexiconEntry {
  /** Normalised English name, lower case. */
  readonly name: string;
  /** The knowledge-base feature the entry stands for; findings it finds carry it as `feature`. */
  readonly id?: string;
  readonly kind: ExtractedKind;
  /**
   * Written forms, vi and en. Vietnamese is listed with diacritics; input without them matches
   * too. A form in capitals (`THA`, `ĐTĐ`) is an abbreviation and matches only capitals.
   */
  readonly terms: readonly string[];
}

export interface ExtractionTimings {
  readonly rulesMs: number;
  /** Null when no LLM was asked. */
  readonly llmMs: number | null;
  readonly totalMs: number;
}

export interface LlmReport {
  readonly model: string;
  /** Findings in the LLM's reply. */
  readonly returned: number;
  /** Dropped because their span is nowhere in the text. */
  readonly dropped: number;
  /** Dropped because a rule finding already covers them (rules win for vitals and labs). */
  readonly merged: number;
  /** Kept in the result (family findings included). */
  readonly kept: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface ExtractionResult {
  /** The patient's findings, in text order. */
  readonly findings: readonly ExtractedFinding[];
  /**
   * Findings about relatives ("mẹ bị tăng huyết áp", "family history of diabetes"), kept out of
   * `findings` so they are never read as the patient's.
   */
  readonly family: readonly ExtractedFinding[];
  readonly timings: ExtractionTimings;
  /** Null when no LLM was asked. */
  readonly llm: LlmReport | null;
}
