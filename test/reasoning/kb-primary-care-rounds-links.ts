// The links that curation rounds 6-12 added to the shipped primary-care base, as each source prints
// them, and the checks every round's links share (kb-primary-care-rounds.test.ts).
import { expect } from '@jest/globals';
import type { readKbDocument } from '../../services/reasoning/src/kb/index.js';

/**
 * Version 0.7.0 (curation round 6): dengue's findings from Table 5 of Hasan et al. 2021 (553
 * laboratory-confirmed cases, Dhaka 2019), hypotension from its abstract.
 */
export const DENGUE_TABLE_SOURCE = 'hasan-2021-dengue-bangladesh-553';
export const DENGUE_ROUND_6 = {
  arthralgia: 0.045,
  diarrhea: 0.262,
  headache: 0.627,
  hypotension: 0.25,
  melena: 0.054,
  rash: 0.045,
  retro_orbital_pain: 0.391,
};
/**
 * Version 0.8.0 (curation round 7): five findings that carried no evidence get a cited link, each
 * as its source prints it; acute pyelonephritis gets its third and fourth links and becomes scorable.
 */
export const ROUND_7 = [
  {
    condition: 'acute_pyelonephritis',
    feature: 'flank_pain',
    probability: 0.962,
    source: 'dawkins-2012-pyelonephritis-pregnancy-jamaica-102',
    as_given: '96.2%',
  },
  {
    condition: 'acute_pyelonephritis',
    feature: 'abdominal_pain',
    probability: 0.846,
    source: 'dawkins-2012-pyelonephritis-pregnancy-jamaica-102',
    as_given: '84.6%',
  },
  {
    condition: 'ischaemic_stroke',
    feature: 'facial_palsy',
    probability: 0.7,
    source: 'mohd-nor-2004-fast-stroke',
    as_given: '70%',
  },
  {
    condition: 'acute_pancreatitis',
    feature: 'epigastric_pain',
    probability: 0.82,
    source: 'mandalapu-acute-pancreatitis-500',
    as_given: '52% (without radiation to the back) + 30% (radiating to the back)',
  },
  {
    condition: 'acute_myocardial_infarction',
    feature: 'diaphoresis',
    probability: 0.702,
    source: 'wu-2025-china-ami-heavy-sweating',
    as_given: '70.2%',
  },
  {
    condition: 'acute_myocardial_infarction',
    feature: 'epigastric_pain',
    probability: 0.1752,
    source: 'malik-2013-ami-chest-pain-multan',
    as_given: '58 (17.5%)',
  },
  {
    condition: 'pulmonary_embolism',
    feature: 'hypoxemia',
    probability: 0.1344,
    source: 'westjem-2018-pe-ed-length-of-stay',
    as_given: '17 (11.7) of 145 and 40 (14.3) of 279',
  },
];
/**
 * Version 0.9.0 (curation round 8): three of the commonest conditions that had no link become
 * scorable, each link as its source prints it (CURATION.md round 8); measles gets 2 links that wait.
 */
export const HEPATITIS_A_SOURCE = 'eun-2007-hepatitis-a-daegu-55';
export const ROUND_8 = [
  {
    condition: 'hepatitis_a',
    feature: 'myalgia',
    probability: 0.473,
    source: HEPATITIS_A_SOURCE,
    as_given: '47.3%',
  },
  {
    condition: 'hepatitis_a',
    feature: 'weight_loss',
    probability: 0.473,
    source: HEPATITIS_A_SOURCE,
    as_given: '47.3%',
  },
  {
    condition: 'hepatitis_a',
    feature: 'fatigue',
    probability: 0.4,
    source: HEPATITIS_A_SOURCE,
    as_given: '40.0%',
  },
  {
    condition: 'hepatitis_a',
    feature: 'abdominal_pain',
    probability: 0.364,
    source: HEPATITIS_A_SOURCE,
    as_given: '36.4%',
  },
  {
    condition: 'hepatitis_a',
    feature: 'diarrhea',
    probability: 0.091,
    source: HEPATITIS_A_SOURCE,
    as_given: '9.1%',
  },
  {
    condition: 'hepatitis_a',
    feature: 'jaundice',
    probability: 0.891,
    source: 'zulkarnain-hepatitis-a-children-jakarta',
    as_given: '89.1%',
  },
  {
    condition: 'infectious_gastroenteritis',
    feature: 'abdominal_pain',
    probability: 0.9425,
    source: 'alseda-2023-norovirus-gii6-lleida',
    as_given: '88.5% and 100%',
  },
  {
    condition: 'infectious_gastroenteritis',
    feature: 'vomiting',
    probability: 0.8415,
    source: 'alseda-2023-norovirus-gii6-lleida',
    as_given: '80.8% and 87.5%',
  },
  {
    condition: 'infectious_gastroenteritis',
    feature: 'nausea',
    probability: 0.7525,
    source: 'alseda-2023-norovirus-gii6-lleida',
    as_given: '69.2% and 81.3%',
  },
  {
    condition: 'gerd',
    feature: 'chest_pain',
    probability: 0.484,
    source: 'min-2014-gerd-extraesophageal-korea',
    as_given: '48.4%',
  },
  {
    condition: 'gerd',
    feature: 'cough',
    probability: 0.32,
    source: 'min-2014-gerd-extraesophageal-korea',
    as_given: '32.0%',
  },
  {
    condition: 'gerd',
    feature: 'wheezing',
    probability: 0.173,
    source: 'min-2014-gerd-extraesophageal-korea',
    as_given: '17.3%',
  },
  {
    condition: 'measles',
    feature: 'fever',
    probability: 0.999,
    source: 'arivalagan-2025-adult-measles-south-india',
    as_given: 'all (52 of 52)',
  },
  {
    condition: 'measles',
    feature: 'rash',
    probability: 0.999,
    source: 'arivalagan-2025-adult-measles-south-india',
    as_given: 'all (52 of 52)',
  },
];
/**
 * Version 0.10.0 (curation round 9): measles gets its third to seventh links from one table of
 * laboratory-confirmed cases and becomes scorable; hepatitis A gets anorexia and fever from an
 * abstract that prints them apart (CURATION.md round 9).
 */
export const MEASLES_TABLE_SOURCE = 'hagan-2017-measles-mongolia-adults';
export const HEPATITIS_A_ROUND_9_SOURCE = 'lee-2008-hepatitis-a-seoul-gyeonggi-222';
export const ROUND_9 = [
  {
    condition: 'measles',
    feature: 'cough',
    probability: 0.7,
    source: MEASLES_TABLE_SOURCE,
    as_given: '87 (70%)',
  },
  {
    condition: 'measles',
    feature: 'conjunctival_injection',
    probability: 0.48,
    source: MEASLES_TABLE_SOURCE,
    as_given: '60 (48%)',
  },
  {
    condition: 'measles',
    feature: 'rhinorrhea',
    probability: 0.45,
    source: MEASLES_TABLE_SOURCE,
    as_given: '56 (45%)',
  },
  {
    condition: 'measles',
    feature: 'headache',
    probability: 0.83,
    source: MEASLES_TABLE_SOURCE,
    as_given: '103 (83%)',
  },
  {
    condition: 'measles',
    feature: 'confusion',
    probability: 0.12,
    source: MEASLES_TABLE_SOURCE,
    as_given: '15 (12%)',
  },
  {
    condition: 'hepatitis_a',
    feature: 'anorexia',
    probability: 0.664,
    source: HEPATITIS_A_ROUND_9_SOURCE,
    as_given: '66.4%',
  },
  {
    condition: 'hepatitis_a',
    feature: 'fever',
    probability: 0.477,
    source: HEPATITIS_A_ROUND_9_SOURCE,
    as_given: '47.7%',
  },
];
/**
 * Version 0.11.0 (curation round 10): streptococcal pharyngitis becomes scorable from the pooled
 * sensitivities of a systematic review (the share of culture-positive patients with each finding);
 * Murphy's sign, urinary urgency and nasal congestion, linked to no condition before, get one link each.
 */
export const STREP_REVIEW_SOURCE = 'aalbers-2011-gabhs-pharyngitis-adults-review';
export const ROUND_10 = [
  {
    condition: 'streptococcal_pharyngitis',
    feature: 'fever',
    probability: 0.5,
    source: STREP_REVIEW_SOURCE,
    as_given: 'sensitivity 0.50 (0.39 to 0.62)',
  },
  {
    condition: 'streptococcal_pharyngitis',
    feature: 'pharyngeal_exudate',
    probability: 0.57,
    source: STREP_REVIEW_SOURCE,
    as_given: 'sensitivity 0.57 (0.44 to 0.70)',
  },
  {
    condition: 'streptococcal_pharyngitis',
    feature: 'lymphadenopathy',
    probability: 0.65,
    source: STREP_REVIEW_SOURCE,
    as_given: 'sensitivity 0.65 (0.55 to 0.74)',
  },
  {
    condition: 'streptococcal_pharyngitis',
    feature: 'cough',
    probability: 0.26,
    source: STREP_REVIEW_SOURCE,
    as_given: 'absence of cough: sensitivity 0.74 (0.68 to 0.79)',
  },
  {
    condition: 'acute_cholecystitis',
    feature: 'positive_murphy_sign',
    probability: 0.8966,
    source: 'singer-1996-cholecystitis-hbs-stony-brook',
    as_given: 'absent in 3 (10%) of 29',
  },
  {
    condition: 'acute_cystitis',
    feature: 'urinary_urgency',
    probability: 0.62,
    source: 'giesen-2010-uti-women-symptoms-review',
    as_given: 'sensitivity 0.62 (0.46 to 0.76)',
  },
  {
    condition: 'influenza',
    feature: 'nasal_congestion',
    probability: 0.91,
    source: 'monto-2000-influenza-ili-zanamivir-trials',
    as_given: '91% (vs 81% without influenza)',
  },
];
/**
 * Version 0.12.0 (curation round 11): petechiae, linked to no condition before, gets one dengue link:
 * the count of patients with petechiae among 466 laboratory-confirmed admitted cases (Ashwini Kumar
 * et al. 2010), divided by that total; the printed 67.2% is of the 125 who bled and is not the link.
 */
export const PETECHIAE_SOURCE = 'ashwini-kumar-2010-dengue-udupi-466';
export const ROUND_11 = [
  {
    condition: 'dengue',
    feature: 'petechiae',
    probability: 0.1803,
    source: PETECHIAE_SOURCE,
    as_given: 'petechiae 84 (67.2%)',
  },
];
/**
 * Version 0.13.0 (curation round 12): varicella becomes scorable from Table 2 of Meyers et al. 2018
 * (77 patients with a varicella diagnosis at a Chennai university hospital); heartburn, linked to no
 * condition before, gets a GERD link from a Vietnamese journal's abstract (Pen Chanraksmey & Quách
 * Trọng Đức 2019: 18 of 23 GERD patients); raised JVP, linked to no condition before, gets a heart
 * failure link (25% of 2,112 admitted patients, Lahore); essential hypertension gets one link that waits.
 */
export const VARICELLA_SOURCE = 'meyers-2018-varicella-university-chennai-77';
export const HEARTBURN_SOURCE = 'pen-chanraksmey-2019-gerd-cambodian-patients';
export const HYPERTENSION_SOURCE = 'mohod-2025-new-onset-hypertension-india-11124';
export const JVP_SOURCE = 'maria-2021-heart-failure-lahore-2112';
export const ROUND_12 = [
  {
    condition: 'varicella',
    feature: 'fever',
    probability: 0.766,
    source: VARICELLA_SOURCE,
    as_given: '59 (76.6)',
  },
  {
    condition: 'varicella',
    feature: 'rash',
    probability: 0.999,
    source: VARICELLA_SOURCE,
    as_given: '77 (100.0)',
  },
  {
    condition: 'varicella',
    feature: 'cough',
    probability: 0.312,
    source: VARICELLA_SOURCE,
    as_given: '24 (31.2)',
  },
  {
    condition: 'gerd',
    feature: 'heartburn',
    probability: 0.783,
    source: HEARTBURN_SOURCE,
    as_given: '18/23 (78.3%)',
  },
  {
    condition: 'essential_hypertension',
    feature: 'headache',
    probability: 0.25,
    source: HYPERTENSION_SOURCE,
    as_given: 'Headache (25%)',
  },
  {
    condition: 'heart_failure',
    feature: 'elevated_jugular_venous_pressure',
    probability: 0.25,
    source: JVP_SOURCE,
    as_given: '25% elevated JVP',
  },
];

/** A link as a round pins it. */
export interface PinnedLink {
  readonly condition: string;
  readonly feature: string;
  readonly probability: number;
  readonly source: string;
  readonly as_given: string;
}

type KbDocument = Awaited<ReturnType<typeof readKbDocument>>;

/**
 * What every round's links share: each is in the base as pinned, its source has an https URL (and
 * the given kind), and the round's sources give the base no other link. Returns the sources by id.
 */
export function expectRoundLinks(
  doc: KbDocument,
  round: readonly PinnedLink[],
  options: { readonly kind?: string } = {},
): Map<string, NonNullable<KbDocument['manifest']>['sources'][number]> {
  const sources = new Map(doc.manifest!.sources.map((s) => [s.id, s]));
  for (const expected of round) {
    const l = doc.links.find((x) => x.condition === expected.condition && x.feature === expected.feature);
    expect(l).toMatchObject(expected);
    expect(sources.get(expected.source)?.url).toMatch(/^https:\/\//);
    if (options.kind !== undefined) expect(sources.get(expected.source)?.kind).toBe(options.kind);
  }
  const roundSources = new Set(round.map((l) => l.source));
  expect(doc.links.filter((l) => roundSources.has(l.source!))).toHaveLength(round.length);
  return sources;
}
