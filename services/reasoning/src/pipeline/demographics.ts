/**
 * Age, sex and the illness's duration as the base's demographic and history features
 * (docs/knowledge-base.md, "Demographic features"):
 *
 * - age → one age band, present (`age_under_5`, `age_5_to_17`, `age_18_to_44`, `age_45_to_64`,
 *   `age_65_or_over`): a categorical finding, so only the patient's band is reported; a condition
 *   the base does not link to that band counts it at the band's background rate;
 * - sex → the base's feature for that sex present, or, for a man in a base that has only `female`,
 *   `female` absent;
 * - duration → `illness_2_weeks_or_more`, present when the longest duration the text states is 14
 *   days or more, absent when it is shorter.
 *
 * Each applies only where the base holds the feature. Pure: no I/O, no clock.
 */
import type { KbFeature } from '../domain/types.js';

/** The age bands, by feature id: [id, from (inclusive), below (exclusive)] in years. */
export const AGE_BANDS: readonly (readonly [string, number, number])[] = [
  ['age_under_5', 0, 5],
  ['age_5_to_17', 5, 18],
  ['age_18_to_44', 18, 45],
  ['age_45_to_64', 45, 65],
  ['age_65_or_over', 65, Infinity],
];

export const LONG_ILLNESS_FEATURE = 'illness_2_weeks_or_more';
export const LONG_ILLNESS_DAYS = 14;

const DAYS_PER: Readonly<Record<string, number>> = {
  minute: 1 / 1440,
  hour: 1 / 24,
  day: 1,
  week: 7,
  month: 30.44,
  year: 365.25,
};

interface FeatureLookup {
  readonly features: ReadonlyMap<string, KbFeature>;
  sexFeature(sex: 'male' | 'female'): KbFeature | undefined;
}

/** The age band feature for an age in years, when the base has the band. */
export function ageBandFeature(index: FeatureLookup, years: number): KbFeature | undefined {
  if (!Number.isFinite(years) || years < 0) return undefined;
  const band = AGE_BANDS.find(([, from, below]) => years >= from && years < below);
  return band === undefined ? undefined : index.features.get(band[0]);
}

/** The sex as the base can score it: its feature for that sex, else the other one absent. */
export function sexEvidence(
  index: FeatureLookup,
  sex: 'male' | 'female',
): { readonly feature: KbFeature; readonly present: boolean } | undefined {
  const own = index.sexFeature(sex);
  if (own !== undefined) return { feature: own, present: true };
  const other = index.sexFeature(sex === 'male' ? 'female' : 'male');
  return other === undefined ? undefined : { feature: other, present: false };
}

/** A duration in days, or undefined for a unit it does not know. */
export function durationDays(value: number, unit: string | undefined): number | undefined {
  const per = unit === undefined ? undefined : DAYS_PER[unit];
  return per === undefined || !Number.isFinite(value) ? undefined : value * per;
}

/** Whether the illness counts as lasting two weeks or more, from its longest stated duration. */
export function longIllness(
  index: FeatureLookup,
  longestDays: number,
): { feature: KbFeature; present: boolean } | undefined {
  const feature = index.features.get(LONG_ILLNESS_FEATURE);
  return feature === undefined ? undefined : { feature, present: longestDays >= LONG_ILLNESS_DAYS };
}
