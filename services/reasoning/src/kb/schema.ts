/**
 * The knowledge-base file format (docs/knowledge-base.md): a directory holding
 *
 *   kb.json          id, version, title, sources (what every number cites), the leak
 *   conditions.csv   one condition a row: id, ICD-10, titles, prior with its source
 *   features.csv     one finding a row: id, kind, labels, HPO term, synonyms (en | vi), leak
 *   links.csv        one P(feature | condition) a row, with its source and where in it
 *
 * CSV so curators edit it in a spreadsheet and a change reads as a one-line diff. Cells are text;
 * the zod row schemas here turn them into values (shape only: empty cell, number, id syntax).
 * What needs the whole base (known sources, ranges, duplicates, links to unknown ids, the prior
 * sum) is checked in validate.ts, which reports every problem with its file, row and column.
 */
import { z } from 'zod';
import { FEATURE_KINDS } from '../domain/types.js';

export const KB_FORMAT = 'clinicalsuite-kb/1';

export const KB_FILES = {
  manifest: 'kb.json',
  conditions: 'conditions.csv',
  features: 'features.csv',
  links: 'links.csv',
} as const;
export type KbFileKey = keyof typeof KB_FILES;

/** Ids of conditions and features: `dengue`, `OMIM:143100`, `HP:0001945`. */
export const RECORD_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
/** A base's own id: `primary-care`, `hpo-2025-01-16`. */
export const KB_ID_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;
/** An HPO term id. */
export const HPO_ID_PATTERN = /^HP:\d{7}$/;
/**
 * An ICD-10 code as WHO ICD-10 and ICD-10-CM write them: a letter, two digits or a digit and a
 * letter (`C4A`), then optionally a dot and 1-4 characters (`A15.0`, `J45.901`, `S72.001A`).
 */
export const ICD10_PATTERN = /^[A-Z][0-9][0-9A-Z](\.[0-9A-Z]{1,4})?$/;
/** Synonyms in one cell are separated by `|`. */
export const SYNONYM_SEPARATOR = '|';

/**
 * What kind of source a number comes from; it is the number's evidence grade (`EVIDENCE_GRADES`).
 * `expert-estimate` marks a clinical number no published source gives (a ClinicalSuite estimate);
 * `modelling-choice` a ClinicalSuite default that is not a clinical number (a default for an
 * annotation without a frequency).
 */
export const SOURCE_KINDS = [
  'guideline',
  'cohort',
  'review',
  'ontology',
  'registry',
  'classification',
  'textbook',
  'expert-estimate',
  'modelling-choice',
] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

/** The evidence grade of a number, from the kind of its source (docs/knowledge-base.md). */
export type EvidenceGrade = 'study' | 'guideline' | 'textbook' | 'expert estimate' | 'modelling choice';
export const EVIDENCE_GRADES: Readonly<Record<SourceKind, EvidenceGrade>> = {
  review: 'study',
  cohort: 'study',
  registry: 'study',
  guideline: 'guideline',
  classification: 'guideline',
  ontology: 'textbook',
  textbook: 'textbook',
  'expert-estimate': 'expert estimate',
  'modelling-choice': 'modelling choice',
};

const nonBlank = z
  .string()
  .min(1, 'required')
  .refine((s) => s.trim() === s, 'no leading or trailing spaces');

export const kbSourceFileSchema = z.strictObject({
  /** What records cite; any text without leading/trailing spaces (`who-dengue-2009`). */
  id: nonBlank,
  kind: z.enum(SOURCE_KINDS),
  citation: nonBlank,
  url: z.url().optional(),
  licence: nonBlank.optional(),
});
export type KbSourceFile = z.infer<typeof kbSourceFileSchema>;

export const kbLeakFileSchema = z.strictObject({
  /** P(feature present | a condition the base does not link it to); range checked in validate. */
  default: z.number(),
  source: nonBlank,
  locator: nonBlank.optional(),
});

export const kbManifestSchema = z.strictObject({
  format: z.literal(KB_FORMAT),
  id: z.string().regex(KB_ID_PATTERN, 'lowercase letters, digits, ".", "_" and "-"'),
  version: nonBlank,
  title: nonBlank,
  description: nonBlank.optional(),
  sources: z.array(kbSourceFileSchema),
  /** Absent only in a base with no scorable condition (definitions waiting for numbers). */
  leak: kbLeakFileSchema.optional(),
});
export type KbManifest = z.infer<typeof kbManifestSchema>;

// ---- CSV cells ---------------------------------------------------------------------------------

const NUMBER_PATTERN = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

const requiredCell = z.string().trim().min(1, 'required');
const optionalCell = z
  .string()
  .trim()
  .transform((s) => (s === '' ? null : s));
const idCell = requiredCell.regex(RECORD_ID_PATTERN, 'letters, digits, "_", ".", ":" and "-"');
const optionalNumberCell = z
  .string()
  .trim()
  .transform((s, ctx): number | null => {
    if (s === '') return null;
    if (!NUMBER_PATTERN.test(s)) {
      ctx.addIssue({ code: 'custom', message: `"${s}" is not a decimal number` });
      return z.NEVER;
    }
    return Number(s);
  });
const listCell = z.string().transform((s) =>
  s
    .split(SYNONYM_SEPARATOR)
    .map((x) => x.trim())
    .filter((x) => x !== ''),
);

/** Columns in the order files are written; `required` must be in the header, the rest may be. */
export const CONDITION_COLUMNS = {
  required: ['id', 'icd10', 'title_en', 'title_vi', 'prior', 'prior_source'],
  optional: ['prior_locator', 'notes'],
} as const;
export const FEATURE_COLUMNS = {
  required: ['id', 'kind', 'label_en', 'label_vi', 'hpo', 'synonyms_en', 'synonyms_vi'],
  optional: ['leak', 'leak_source', 'leak_locator', 'implies', 'notes'],
} as const;
export const LINK_COLUMNS = {
  required: ['condition', 'feature', 'probability', 'source'],
  optional: ['specificity', 'locator', 'as_given', 'notes'],
} as const;

export const conditionRowSchema = z.strictObject({
  id: idCell,
  icd10: optionalCell,
  title_en: requiredCell,
  title_vi: optionalCell,
  /** Empty together with prior_source: the condition is defined but not scorable. */
  prior: optionalNumberCell,
  prior_source: optionalCell,
  prior_locator: optionalCell,
  notes: optionalCell,
});
export type ConditionRow = z.infer<typeof conditionRowSchema>;

export const featureRowSchema = z.strictObject({
  id: idCell,
  kind: z.enum(FEATURE_KINDS, { error: `one of ${FEATURE_KINDS.join(', ')}` }),
  label_en: requiredCell,
  label_vi: optionalCell,
  hpo: optionalCell,
  synonyms_en: listCell,
  synonyms_vi: listCell,
  leak: optionalNumberCell,
  leak_source: optionalCell,
  leak_locator: optionalCell,
  /** A more general feature this one implies when present (productive cough → cough). */
  implies: optionalCell,
  notes: optionalCell,
});
export type FeatureRow = z.infer<typeof featureRowSchema>;

export const linkRowSchema = z.strictObject({
  condition: idCell,
  feature: idCell,
  probability: optionalNumberCell,
  /**
   * P(feature absent | condition absent) in the source's population, from the same source as
   * `probability`: the link's likelihood ratio is taken against 1 − specificity instead of the
   * feature's leak. Empty: against the leak.
   */
  specificity: optionalNumberCell,
  source: optionalCell,
  locator: optionalCell,
  /** The value as the source gives it (`7/13`, `25%`, `HP:0040281`), for the curator's eye. */
  as_given: optionalCell,
  notes: optionalCell,
});
export type LinkRow = z.infer<typeof linkRowSchema>;

/** A knowledge base as its files hold it: what the loader parses and the writers write. */
export interface KbDocument {
  readonly manifest: KbManifest;
  readonly conditions: readonly ConditionRow[];
  readonly features: readonly FeatureRow[];
  readonly links: readonly LinkRow[];
}
