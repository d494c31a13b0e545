/**
 * The word and unit tables of the rule pass (rules.ts), on folded text (text.ts: lower case, no
 * diacritics): the labels that name each vital and lab (`strong`: a reading on their own; `weak`:
 * one- or two-letter labels that count only with a unit or a possible value), the units each is
 * written in with their factor to the normalised unit, the filler words allowed between a label and
 * its value, and the time units and number words of durations. Data only: how readings are found,
 * checked and turned into findings is rules.ts. Pure.
 */
import { LB_TO_KG, type LimitKey } from './units.js';

/** Words that may stand between a label and its value (`sốt cao 39`, `mạch nhanh 120`, `glucose lúc đói 7`). */
export const FILLERS = [
  'la',
  'of',
  'is',
  'was',
  'at',
  'about',
  'approximately',
  'approx',
  'around',
  'khoang',
  'luc',
  'vao vien',
  'luc vao vien',
  'khi vao vien',
  'on admission',
  'do duoc',
  'duoc',
  'len',
  'len den',
  'den',
  'toi',
  'up to',
  'max',
  'cao',
  'nhe',
  'nhanh',
  'cham',
  'measured',
  'tang',
  'giam',
  'mau',
  'mao mach',
  'tinh mach',
  'luc doi',
  'doi',
  'fasting',
  'random',
  'ngau nhien',
  'serum',
  'huyet thanh',
  'sau an',
  'tam thu',
  'tam truong',
];

export interface UnitDef {
  /** Sticky, tried after optional white space. */
  readonly re: RegExp;
  /** The unit as written, normalised spelling. */
  readonly written: string;
}

export function u(source: string, written: string): UnitDef {
  return { re: new RegExp(source, 'uy'), written };
}

export const END = '(?![\\p{L}\\p{N}])';

export const PER_MIN = `(?:(?:l|lan|nhip|ck|chu ky|beats?|breaths?|times)\\s?(?:\\/|per)\\s?(?:p|ph|phut|min|minute|mins)|bpm|b\\/m|rpm|\\/\\s?(?:p|ph|phut|min|minute)|per min(?:ute)?)${END}`;

export const COUNT_UNITS: { def: UnitDef; toE9PerL: number }[] = [
  { def: u(`(?:(?:x|\\*)\\s?)?10\\s?(?:\\^|e|mu)?\\s?9\\s?\\/\\s?l${END}`, '10^9/L'), toE9PerL: 1 },
  { def: u(`(?:g|giga)\\s?\\/\\s?l${END}`, 'G/L'), toE9PerL: 1 },
  {
    def: u(`(?:(?:x|\\*)\\s?)?10\\s?(?:\\^|e|mu)?\\s?3\\s?\\/\\s?(?:ul|mm3|mcl)${END}`, '10^3/µL'),
    toE9PerL: 1,
  },
  { def: u(`(?:k|thou|nghin)\\s?\\/\\s?(?:ul|mm3|mcl)${END}`, 'K/µL'), toE9PerL: 1 },
  { def: u(`(?:(?:cells?|tb|te bao)\\s?)?\\/\\s?(?:mm3|ul|mcl)${END}`, '/µL'), toE9PerL: 0.001 },
];

export const TEMPERATURE_STRONG = [
  'nhiet do',
  'nhiet do co the',
  'than nhiet',
  'temperature',
  'temp',
  'tmax',
  'sot',
  'sot cao',
  'sot nhe',
  'fever',
  'fever of',
  'fever to',
  'febrile to',
];

export const TEMPERATURE_WEAK = ['t', 't°', 't0'];

export const TEMPERATURE_UNIT =
  /(?:(?:°|o|0)\s?|(?:do|degrees?|deg\.?)\s?)?(celsius|fahrenheit|c|f)(?![\p{L}])|(?:°|do|degrees?|deg\.?)(?![\p{L}])/uy;

export const BP_STRONG = ['huyet ap', 'blood pressure', 'bp', 'ha', 'b/p', 'nibp', 'abp'];

export const MMHG = u(`mm\\s?hg${END}`, 'mmHg');

export interface SimpleRule {
  readonly name: string;
  readonly kind: 'vital' | 'lab';
  readonly strong: readonly string[];
  readonly weak: readonly string[];
  /** Each unit with its factor to the normalised unit. */
  readonly units: readonly { readonly def: UnitDef; readonly factor: number }[];
  readonly normalUnit: string;
  /** The unit a vital has when none is written; null: a lab keeps its value without a unit. */
  readonly impliedUnit: boolean;
  readonly limit: LimitKey;
  /** Thousands separators (`150.000/mm3`). */
  readonly count?: boolean;
  /** Unlabelled readings with these units (`110 bpm`). */
  readonly unlabelledUnits?: readonly UnitDef[];
}

export const SIMPLE_RULES: readonly SimpleRule[] = [
  {
    name: 'heart rate',
    kind: 'vital',
    strong: ['mach', 'nhip tim', 'tan so tim', 'heart rate', 'hr', 'pulse', 'pulse rate', 'tan so mach'],
    weak: ['m', 'p', 'ts tim'],
    units: [{ def: u(PER_MIN, 'bpm'), factor: 1 }],
    normalUnit: 'bpm',
    impliedUnit: true,
    limit: 'heart rate',
    unlabelledUnits: [
      u(
        `(?:bpm|beats?\\s?(?:\\/|per)\\s?min(?:ute)?|nhip\\s?\\/\\s?phut|ck\\s?\\/\\s?p(?:hut)?)${END}`,
        'bpm',
      ),
    ],
  },
  {
    name: 'respiratory rate',
    kind: 'vital',
    strong: ['nhip tho', 'tan so tho', 'respiratory rate', 'resp rate', 'respirations', 'resp', 'rr'],
    weak: ['nt', 'r', 'tho', 'ts tho'],
    units: [{ def: u(PER_MIN, '/min'), factor: 1 }],
    normalUnit: '/min',
    impliedUnit: true,
    limit: 'respiratory rate',
    unlabelledUnits: [u(`(?:breaths?\\s?(?:\\/|per)\\s?min(?:ute)?)${END}`, '/min')],
  },
  {
    name: 'oxygen saturation',
    kind: 'vital',
    strong: [
      'spo2',
      'sp02',
      'spo 2',
      'o2 sat',
      'o2 sats',
      'o2 saturation',
      'oxygen saturation',
      'do bao hoa oxy',
      'do bao hoa o2',
      'bao hoa oxy',
      'bao hoa o2',
      'pulse ox',
      'pulse oximetry',
    ],
    weak: [],
    units: [{ def: u('%', '%'), factor: 1 }],
    normalUnit: '%',
    impliedUnit: true,
    limit: 'oxygen saturation',
  },
  {
    name: 'weight',
    kind: 'vital',
    strong: ['can nang', 'weight', 'body weight', 'trong luong', 'wt'],
    weak: ['cn', 'nang'],
    units: [
      { def: u(`(?:kg|kgs|kilograms?|ky|ki|can)${END}(?!\\s?\\/)`, 'kg'), factor: 1 },
      { def: u(`(?:lbs?|pounds?)${END}`, 'lb'), factor: LB_TO_KG },
    ],
    normalUnit: 'kg',
    impliedUnit: true,
    limit: 'weight',
  },
  {
    name: 'bmi',
    kind: 'vital',
    strong: ['bmi', 'chi so khoi co the', 'body mass index'],
    weak: [],
    units: [{ def: u(`kg\\s?\\/\\s?m2${END}`, 'kg/m2'), factor: 1 }],
    normalUnit: 'kg/m2',
    impliedUnit: true,
    limit: 'bmi',
  },
  {
    name: 'hba1c',
    kind: 'lab',
    strong: ['hba1c', 'hb a1c', 'a1c', 'hemoglobin a1c', 'haemoglobin a1c', 'glycated hemoglobin', 'hba1'],
    weak: [],
    units: [{ def: u('%', '%'), factor: 1 }],
    normalUnit: '%',
    impliedUnit: false,
    limit: 'hba1c %',
  },
  {
    name: 'white blood cell count',
    kind: 'lab',
    strong: [
      'bach cau',
      'so luong bach cau',
      'wbc',
      'white blood cells',
      'white blood cell count',
      'white blood cell',
      'white cell count',
      'white count',
      'leukocytes',
      'leukocyte count',
      'leucocytes',
    ],
    weak: ['bc'],
    units: COUNT_UNITS.map((c) => ({ def: c.def, factor: c.toE9PerL })),
    normalUnit: '10^9/L',
    impliedUnit: false,
    limit: 'white blood cell count',
    count: true,
  },
  {
    name: 'platelet count',
    kind: 'lab',
    strong: ['tieu cau', 'so luong tieu cau', 'platelets', 'platelet count', 'platelet', 'plt', 'plts'],
    weak: ['tc'],
    units: COUNT_UNITS.map((c) => ({ def: c.def, factor: c.toE9PerL })),
    normalUnit: '10^9/L',
    impliedUnit: false,
    limit: 'platelet count',
    count: true,
  },
  {
    name: 'c-reactive protein',
    kind: 'lab',
    strong: [
      'crp',
      'hs-crp',
      'hscrp',
      'crp-hs',
      'c-reactive protein',
      'c reactive protein',
      'protein c phan ung',
    ],
    weak: [],
    units: [
      { def: u(`mg\\s?\\/\\s?l${END}`, 'mg/L'), factor: 1 },
      { def: u(`mg\\s?\\/\\s?dl${END}`, 'mg/dL'), factor: 10 },
    ],
    normalUnit: 'mg/L',
    impliedUnit: false,
    limit: 'c-reactive protein',
  },
  {
    name: 'hemoglobin',
    kind: 'lab',
    strong: ['hemoglobin', 'haemoglobin', 'huyet sac to', 'hgb', 'hb'],
    weak: ['hst'],
    units: [
      { def: u(`g\\s?\\/\\s?dl${END}`, 'g/dL'), factor: 1 },
      { def: u(`g\\s?\\/\\s?l${END}`, 'g/L'), factor: 0.1 },
    ],
    normalUnit: 'g/dL',
    impliedUnit: false,
    limit: 'hemoglobin',
  },
];

export const HEIGHT_STRONG = ['chieu cao', 'height', 'body height'];

export const HEIGHT_WEAK = ['cao', 'ht'];

export const GLUCOSE_STRONG = [
  'duong huyet',
  'duong mau',
  'glucose',
  'glucose mau',
  'glucose mao mach',
  'glycemia',
  'glycemie',
  'glycaemia',
  'blood sugar',
  'blood glucose',
  'fasting glucose',
  'fasting blood glucose',
  'fasting plasma glucose',
  'fbg',
  'fpg',
  'fbs',
  'rbg',
  'cbg',
];

export const GLUCOSE_WEAK = ['bg', 'dh', 'glu', 'dmmm'];

export const MG_DL = u(`(?:mg\\s?\\/\\s?dl|mg\\s?%)${END}`, 'mg/dL');

export const MMOL_L = u(`(?:mmol\\s?\\/\\s?l|mm)${END}`, 'mmol/L');

export const CREATININE_STRONG = ['creatinin', 'creatinine', 'creatinin mau', 'serum creatinine', 'creat'];

export const CREATININE_WEAK = ['cre', 'cr', 'scr'];

export const UMOL_L = u(`(?:umol|mcmol)\\s?\\/\\s?l${END}`, 'µmol/L');

export const CREAT_MG_DL = u(`mg\\s?\\/\\s?dl${END}`, 'mg/dL');

export const HBA1C_MMOL_MOL = u(`mmol\\s?\\/\\s?mol${END}`, 'mmol/mol');

export const YOUNG_UNIT: Readonly<Record<string, { unit: string; perYear: number }>> = {
  thang: { unit: 'month', perYear: 12 },
  month: { unit: 'month', perYear: 12 },
  mo: { unit: 'month', perYear: 12 },
  tuan: { unit: 'week', perYear: 52.1775 },
  week: { unit: 'week', perYear: 52.1775 },
  wk: { unit: 'week', perYear: 52.1775 },
  ngay: { unit: 'day', perYear: 365.2425 },
  day: { unit: 'day', perYear: 365.2425 },
};

/** Time units (folded) with their unit and their written form (checked: "đáy" is not "day"). */
export const DURATION_UNITS: Readonly<Record<string, readonly [string, string]>> = {
  phut: ['minute', 'phút'],
  minute: ['minute', 'minute'],
  minutes: ['minute', 'minutes'],
  min: ['minute', 'min'],
  mins: ['minute', 'mins'],
  gio: ['hour', 'giờ'],
  h: ['hour', 'h'],
  hour: ['hour', 'hour'],
  hours: ['hour', 'hours'],
  hr: ['hour', 'hr'],
  hrs: ['hour', 'hrs'],
  ngay: ['day', 'ngày'],
  hom: ['day', 'hôm'],
  day: ['day', 'day'],
  days: ['day', 'days'],
  d: ['day', 'd'],
  tuan: ['week', 'tuần'],
  week: ['week', 'week'],
  weeks: ['week', 'weeks'],
  wk: ['week', 'wk'],
  wks: ['week', 'wks'],
  thang: ['month', 'tháng'],
  month: ['month', 'month'],
  months: ['month', 'months'],
  mo: ['month', 'mo'],
  mos: ['month', 'mos'],
  nam: ['year', 'năm'],
  year: ['year', 'year'],
  years: ['year', 'years'],
  yr: ['year', 'yr'],
  yrs: ['year', 'yrs'],
};

/** Written numbers before a time unit ("ba ngày", "two weeks", "a week"), with their written forms. */
export const WORD_NUMBERS: readonly (readonly [string, string, number])[] = [
  ['mot', 'một', 1],
  ['hai', 'hai', 2],
  ['ba', 'ba', 3],
  ['bon', 'bốn', 4],
  ['nam', 'năm', 5],
  ['sau', 'sáu', 6],
  ['bay', 'bảy', 7],
  ['tam', 'tám', 8],
  ['chin', 'chín', 9],
  ['muoi', 'mười', 10],
  ['a', 'a', 1],
  ['an', 'an', 1],
  ['one', 'one', 1],
  ['two', 'two', 2],
  ['three', 'three', 3],
  ['four', 'four', 4],
  ['five', 'five', 5],
  ['six', 'six', 6],
  ['seven', 'seven', 7],
  ['eight', 'eight', 8],
  ['nine', 'nine', 9],
  ['ten', 'ten', 10],
  ['twelve', 'twelve', 12],
];
