import type { CaseFile } from '../schemas/case.js';
import { matchesEn, prepareText } from './text.js';

/**
 * The reply check: a patient does not know their diagnosis, so a reply that names it (its name, an
 * alias in either language, or its ICD-10 code) is not sent as is. The model never sees the
 * diagnosis, but a model may guess it from the symptoms. Matched without diacritics, on purpose
 * broader than the disclosure's matching: a false alarm costs a regeneration, a miss a leak. Pure.
 */

export function diagnosisTerms(diagnosis: CaseFile['diagnosis']): string[] {
  return [diagnosis.name, ...diagnosis.aliases, diagnosis.icd10];
}

/** The first diagnosis term the text names, or null. */
export function findLeak(text: string, terms: readonly string[]): string | null {
  const prepared = prepareText(text);
  return terms.find((t) => matchesEn(prepared, t)) ?? null;
}

/** The text without the sentences that name a term; '' when every sentence does. */
export function redact(text: string, terms: readonly string[]): string {
  return text
    .split(/(?<=[.!?…])\s+|\n+/u)
    .filter((s) => findLeak(s, terms) === null)
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
}
