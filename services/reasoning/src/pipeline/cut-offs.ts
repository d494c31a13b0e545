/**
 * The published vital and lab cut-offs the clinical map uses to turn a measurement into the
 * presence or absence of a base's feature (temperature → fever, systolic pressure → hypotension, …),
 * each with its source (the service README lists them too).
 *
 * Pure data and one predicate: no I/O.
 */

/** A published cut-off that turns a measurement into a feature's presence. */
export interface Threshold {
  /** The extractor's measurement name. */
  readonly measurement: string;
  readonly unit: string;
  /** The abnormality, by HPO term (and a conventional id where the base has no HPO terms). */
  readonly hpo: string;
  readonly id: string;
  readonly above: boolean;
  /** Present when value > limit (above) or value < limit (below); `inclusive` adds equality. */
  readonly limit: number;
  readonly inclusive: boolean;
  readonly source: string;
}

const SIRS =
  'Bone RC, Balk RA, Cerra FB, et al. Definitions for sepsis and organ failure and guidelines for the use of innovative therapies in sepsis. ACCP/SCCM Consensus Conference. Chest. 1992;101(6):1644-1655';

/** The cut-offs, each from its source (README.md lists them too). */
export const THRESHOLDS: readonly Threshold[] = [
  {
    measurement: 'temperature',
    unit: '°C',
    hpo: 'HP:0001945',
    id: 'fever',
    above: true,
    limit: 38,
    inclusive: true,
    source:
      'CDC, Definitions of Symptoms for Reportable Illnesses (2017): fever is a measured temperature of 100.4 °F [38 °C] or greater',
  },
  {
    measurement: 'heart rate',
    unit: 'bpm',
    hpo: 'HP:0001649',
    id: 'tachycardia',
    above: true,
    limit: 100,
    inclusive: false,
    source: 'American Heart Association, Tachycardia: Fast Heart Rate: a heart rate over 100 beats a minute',
  },
  {
    measurement: 'respiratory rate',
    unit: '/min',
    hpo: 'HP:0002789',
    id: 'tachypnea',
    above: true,
    limit: 20,
    inclusive: false,
    source: `${SIRS}: respiratory rate > 20 breaths/min`,
  },
  {
    measurement: 'systolic blood pressure',
    unit: 'mmHg',
    hpo: 'HP:0002615',
    id: 'hypotension',
    above: false,
    limit: 90,
    inclusive: false,
    source: `${SIRS}: hypotension, a systolic blood pressure < 90 mmHg`,
  },
  {
    measurement: 'oxygen saturation',
    unit: '%',
    hpo: 'HP:0012418',
    id: 'hypoxemia',
    above: false,
    limit: 90,
    inclusive: false,
    source: 'WHO, Oxygen therapy for children (2016): hypoxaemia, an SpO2 below 90%',
  },
  {
    measurement: 'platelet count',
    unit: '10^9/L',
    hpo: 'HP:0001873',
    id: 'thrombocytopenia',
    above: false,
    limit: 150,
    inclusive: false,
    source:
      'Gauer RL, Braun MM. Thrombocytopenia. Am Fam Physician. 2012;85(6):612-622: a platelet count below 150 × 10^3 per µL',
  },
  {
    measurement: 'white blood cell count',
    unit: '10^9/L',
    hpo: 'HP:0001974',
    id: 'leukocytosis',
    above: true,
    limit: 12,
    inclusive: false,
    source: `${SIRS}: white blood cell count > 12,000/mm3`,
  },
  {
    measurement: 'white blood cell count',
    unit: '10^9/L',
    hpo: 'HP:0001882',
    id: 'leukopenia',
    above: false,
    limit: 4,
    inclusive: false,
    source: `${SIRS}: white blood cell count < 4,000/mm3`,
  },
];

/** Whether a reading meets the cut-off (the abnormality is present). */
export function meets(t: Threshold, value: number): boolean {
  if (t.above) return t.inclusive ? value >= t.limit : value > t.limit;
  return t.inclusive ? value <= t.limit : value < t.limit;
}
