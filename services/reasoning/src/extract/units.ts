/**
 * Numbers and units as clinical notes write them, and the conversions between units. Pure.
 *
 * Conversions are unit definitions or physical constants, never clinical numbers:
 * - °F → °C: (F − 32) × 5/9; lb → kg: × 0.45359237 (the international pound); in → cm: × 2.54.
 * - glucose mg/dL ↔ mmol/L: molar mass of glucose (C6H12O6) 180.156 g/mol, so 1 mmol/L =
 *   18.0156 mg/dL (the brief's 18.016).
 * - creatinine mg/dL ↔ µmol/L: molar mass of creatinine (C4H7N3O) 113.12 g/mol, so 1 mg/dL =
 *   10 000 / 113.12 = 88.40 µmol/L.
 * - cell counts: 1 µL = 1 mm³ = 10⁻⁶ L, so 10³/µL = 10⁹/L and 1/µL = 10⁻³ × 10⁹/L.
 * - haemoglobin g/L → g/dL: ÷ 10; CRP mg/dL → mg/L: × 10.
 */

/** Molar masses (g/mol) from the atomic weights of C 12.011, H 1.008, N 14.007, O 15.999. */
export const MOLAR_MASS = { glucose: 180.156, creatinine: 113.12 } as const;
/** mg/dL per mmol/L of glucose. */
export const GLUCOSE_MG_DL_PER_MMOL_L = MOLAR_MASS.glucose / 10;
/** µmol/L per mg/dL of creatinine. */
export const CREATININE_UMOL_L_PER_MG_DL = 10_000 / MOLAR_MASS.creatinine;
export const LB_TO_KG = 0.45359237;
export const IN_TO_CM = 2.54;

export const fahrenheitToCelsius = (f: number): number => ((f - 32) * 5) / 9;

/** Rounded for output (conversions carry no more precision than the reading). */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * A number as written: `37,5` and `37.5` are 37.5; `150.000` and `150,000` are 150 000 when
 * `thousands` says the quantity is a count (or when there are several groups: `1.250.000`); with
 * both separators the last one is the decimal mark (`1.234,5`).
 */
export function parseNumber(written: string, thousands = false): number {
  const s = written.trim();
  const dots = (s.match(/\./g) ?? []).length;
  const commas = (s.match(/,/g) ?? []).length;
  if (dots > 0 && commas > 0) {
    const decimal = s.lastIndexOf('.') > s.lastIndexOf(',') ? '.' : ',';
    const other = decimal === '.' ? ',' : '.';
    return Number(s.split(other).join('').replace(decimal, '.'));
  }
  const sep = dots > 0 ? '.' : commas > 0 ? ',' : null;
  if (sep === null) return Number(s);
  const groups = s.split(sep);
  const grouped = groups.slice(1).every((g) => g.length === 3);
  if (grouped && (groups.length > 2 || thousands)) return Number(groups.join(''));
  if (groups.length > 2) return Number.NaN;
  return Number(s.replace(sep, '.'));
}

/**
 * Limits outside which a reading is physiologically impossible for a living patient, so it is a
 * typo or a unit error (`nhiệt độ 390`, `SpO2 120%`, `102 °C` meant as °F). A modelling choice of
 * this extractor, deliberately wider than any value a patient survives: these are not reference
 * ranges and say nothing about normal or abnormal. Values outside are flagged, not accepted.
 */
export const IMPOSSIBLE_OUTSIDE = {
  temperature: { min: 15, max: 47, unit: '°C' },
  'systolic blood pressure': { min: 20, max: 320, unit: 'mmHg' },
  'diastolic blood pressure': { min: 5, max: 250, unit: 'mmHg' },
  'heart rate': { min: 10, max: 350, unit: 'bpm' },
  'respiratory rate': { min: 2, max: 120, unit: '/min' },
  'oxygen saturation': { min: 20, max: 100, unit: '%' },
  weight: { min: 0.2, max: 700, unit: 'kg' },
  height: { min: 20, max: 275, unit: 'cm' },
  bmi: { min: 5, max: 250, unit: 'kg/m2' },
  'glucose mmol/L': { min: 0.1, max: 200, unit: 'mmol/L' },
  'hba1c %': { min: 1, max: 40, unit: '%' },
  'hba1c mmol/mol': { min: 1, max: 400, unit: 'mmol/mol' },
  'white blood cell count': { min: 0.01, max: 2000, unit: '10^9/L' },
  'platelet count': { min: 0.1, max: 10_000, unit: '10^9/L' },
  'c-reactive protein': { min: 0, max: 2000, unit: 'mg/L' },
  hemoglobin: { min: 0.5, max: 30, unit: 'g/dL' },
  'creatinine umol/L': { min: 1, max: 10_000, unit: 'µmol/L' },
  age: { min: 0, max: 125, unit: 'year' },
} as const satisfies Record<string, { min: number; max: number; unit: string }>;

export type LimitKey = keyof typeof IMPOSSIBLE_OUTSIDE;

/** Null when possible; otherwise why not. */
export function impossibility(key: LimitKey, value: number): string | null {
  const l = IMPOSSIBLE_OUTSIDE[key];
  if (Number.isFinite(value) && value >= l.min && value <= l.max) return null;
  return `${round(value)} ${l.unit} is outside the possible ${l.min}-${l.max} ${l.unit}: a typo or a unit error`;
}
