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

const ESC_ESH_2018 =
  'Williams B, Mancia G, Spiering W, et al. 2018 ESC/ESH Guidelines for the management of arterial hypertension. Eur Heart J. 2018;39(33):3021-3104, Table 3 (office blood pressure categories)';
const ADA_2024 =
  'American Diabetes Association Professional Practice Committee. 2. Diagnosis and Classification of Diabetes: Standards of Care in Diabetes-2024. Diabetes Care. 2024;47(Suppl 1):S20-S42';

/** Cut-offs of features the base names by id only (no HPO term of their own). */
export const ID_THRESHOLDS: readonly Threshold[] = [
  {
    measurement: 'systolic blood pressure',
    unit: 'mmHg',
    hpo: '',
    id: 'elevated_blood_pressure',
    above: true,
    limit: 140,
    inclusive: true,
    source: `${ESC_ESH_2018}: grade 1 hypertension from a systolic pressure of 140 mmHg`,
  },
  {
    measurement: 'systolic blood pressure',
    unit: 'mmHg',
    hpo: '',
    id: 'severely_elevated_blood_pressure',
    above: true,
    limit: 180,
    inclusive: true,
    source: `${ESC_ESH_2018}: grade 3 hypertension from a systolic pressure of 180 mmHg`,
  },
  {
    measurement: 'hemoglobin',
    unit: 'g/dL',
    hpo: '',
    id: 'low_hemoglobin',
    above: false,
    limit: 12,
    inclusive: false,
    source:
      'WHO. Haemoglobin concentrations for the diagnosis of anaemia and assessment of severity. WHO/NMH/NHD/MNM/11.1, 2011: anaemia below 12 g/dL in non-pregnant women (13 g/dL in men, 11 g/dL in pregnancy and in children under 5; the lowest adult limit is used for everyone)',
  },
  {
    measurement: 'glucose',
    unit: 'mg/dL',
    hpo: '',
    id: 'high_blood_glucose',
    above: true,
    limit: 200,
    inclusive: true,
    source: `${ADA_2024}: a random plasma glucose of 200 mg/dL (11.1 mmol/L) or more with symptoms of hyperglycaemia`,
  },
  {
    measurement: 'glucose',
    unit: 'mmol/L',
    hpo: '',
    id: 'high_blood_glucose',
    above: true,
    limit: 11.1,
    inclusive: true,
    source: `${ADA_2024}: a random plasma glucose of 200 mg/dL (11.1 mmol/L) or more with symptoms of hyperglycaemia`,
  },
  {
    measurement: 'glucose',
    unit: 'mg/dL',
    hpo: '',
    id: 'low_blood_glucose',
    above: false,
    limit: 70,
    inclusive: false,
    source: `${ADA_2024}, section 6: level 1 hypoglycaemia, a glucose below 70 mg/dL (3.9 mmol/L)`,
  },
  {
    measurement: 'glucose',
    unit: 'mmol/L',
    hpo: '',
    id: 'low_blood_glucose',
    above: false,
    limit: 3.9,
    inclusive: false,
    source: `${ADA_2024}, section 6: level 1 hypoglycaemia, a glucose below 70 mg/dL (3.9 mmol/L)`,
  },
];

/** Whether a reading meets the cut-off (the abnormality is present). */
export function meets(t: Threshold, value: number): boolean {
  if (t.above) return t.inclusive ? value >= t.limit : value > t.limit;
  return t.inclusive ? value <= t.limit : value < t.limit;
}
