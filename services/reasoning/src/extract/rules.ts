/**
 * The rule pass: vitals and labs with their units, age, sex and duration, in Vietnamese (with or
 * without diacritics) and English, plus the lexicon's symptoms, signs and past conditions with
 * their negation, uncertainty and history context. Pure: text in, findings out.
 *
 * Matching runs on the folded text (text.ts), so `nhiet do 39 do`, `Nhiệt độ: 39°C`, `T° 39 oC` and
 * `temp 102 F` read alike; every finding's `start`/`end` point into the input as written.
 *
 * A reading needs a label (`mạch`, `HR`, `HA`, `SpO2`, `đường huyết`, `WBC` …) or a unit that names
 * the quantity (`39°C`, `140/90 mmHg`, `110 bpm`). A one- or two-letter label (`T`, `M`, `P`, `NT`,
 * `BC`, `Cr`) counts only with its unit or with a possible value; a reading followed by another
 * quantity's unit (`sốt 3 ngày`) is not read. Impossible values (units.ts `IMPOSSIBLE_OUTSIDE`) are
 * kept with `implausible` set, never accepted as observations.
 *
 * The labels, units, fillers and time words are data, in rule-tables.ts; age, sex and duration are
 * read in demographics.ts; this file reads the measurements and runs the pass.
 */
import { ageDrafts, durationDrafts, sexDrafts } from './demographics.js';
import { withLimit, type Draft } from './draft.js';
import { matchLexicon } from './lexicon.js';
import { applyContext, findCues } from './negation.js';
import { keepLongest, SpanSet, type Span } from './terms.js';
import { foldText, sourceRange, type FoldedText } from './text.js';
import type { ExtractedFinding, LexiconEntry, Quantity } from './types.js';
import {
  BP_STRONG,
  CREAT_MG_DL,
  CREATININE_STRONG,
  CREATININE_WEAK,
  END,
  FILLERS,
  GLUCOSE_STRONG,
  GLUCOSE_WEAK,
  HBA1C_MMOL_MOL,
  HEIGHT_STRONG,
  HEIGHT_WEAK,
  MG_DL,
  MMHG,
  MMOL_L,
  SIMPLE_RULES,
  TEMPERATURE_STRONG,
  TEMPERATURE_UNIT,
  TEMPERATURE_WEAK,
  UMOL_L,
  u,
  type SimpleRule,
  type UnitDef,
} from './rule-tables.js';
import {
  CREATININE_UMOL_L_PER_MG_DL,
  GLUCOSE_MG_DL_PER_MMOL_L,
  IN_TO_CM,
  fahrenheitToCelsius,
  impossibility,
  parseNumber,
  round,
} from './units.js';

// ---------------------------------------------------------------------------------------------
// Labels, gaps, numbers, units (all on folded text).

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

const labelPatterns = new WeakMap<readonly string[], RegExp>();

/** Labels as one alternation, longest first, on word boundaries (a digit may follow: `HA140/90`). */
function labelPattern(labels: readonly string[]): RegExp {
  let pattern = labelPatterns.get(labels);
  if (pattern === undefined) {
    const alts = [...labels].sort((a, b) => b.length - a.length).map(escape);
    pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${alts.join('|')})(?![\\p{L}])`, 'gu');
    labelPatterns.set(labels, pattern);
  }
  return pattern;
}

/** One separator or filler word between a label and its value (`sốt cao 39`, `HA: 120/80`). */
const GAP_PART = new RegExp(
  `[\\s:=~(-]|(?<![\\p{L}])(?:${[...FILLERS]
    .sort((a, b) => b.length - a.length)
    .map(escape)
    .join('|')})(?![\\p{L}])`,
  'uy',
);
/** The most characters of separators and fillers a label and its value may have between them. */
const MAX_GAP_CHARS = 40;
const NUMBER = /\d+(?:[.,]\d+)*/y;
/** Two numbers with a slash; not one when digits go on after it (see `digitsFollow`). */
const PAIR = /(\d{2,3})\s?\/\s?(\d{1,3})/y;

/**
 * Where the separators and fillers from `at` end, read part by part as a greedy repetition of
 * GAP_PART would (the first part that fits, each time), stopping once past MAX_GAP_CHARS.
 */
function gapEnd(f: string, at: number): number {
  let end = at;
  while (end - at <= MAX_GAP_CHARS) {
    const part = matchAt(GAP_PART, f, end);
    if (part === null || part[0] === '') break;
    end += part[0].length;
  }
  return end;
}

/** Whether a digit follows `at`, maybe after dots and commas (`120/80.5`, `120/805`: not a pair). */
function digitsFollow(f: string, at: number): boolean {
  let i = at;
  while (f[i] === '.' || f[i] === ',') i++;
  const c = f.charCodeAt(i);
  return c >= 0x30 && c <= 0x39;
}

/** Something unit-like right after a number: a letter, %, ° or / stuck to it, or a known unit word. */
const OTHER_UNIT =
  /(?:[\p{L}%°/]|\s(?:%|°|\/|(?:ngay|hom|tuan|thang|nam|gio|phut|tuoi|lan|vien|kg|mg|mcg|ml|cm|mm|mmhg|mmol|umol|days?|weeks?|months?|years?|hours?|hrs?|mins?|minutes?|times|tablets?|do|degrees?|lit|lits?)(?![\p{L}])))/uy;

function matchAt(re: RegExp, s: string, at: number): RegExpExecArray | null {
  re.lastIndex = at;
  return re.exec(s);
}

function unitAt(
  folded: string,
  at: number,
  units: readonly UnitDef[],
): { def: UnitDef; end: number; match: RegExpExecArray } | null {
  const from = folded[at] === ' ' ? at + 1 : at;
  for (const def of units) {
    const m = matchAt(def.re, folded, from);
    if (m !== null) return { def, end: from + m[0].length, match: m };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// One labelled reading.

interface Reading {
  /** Folded offsets. */
  readonly labelStart: number;
  readonly valueStart: number;
  readonly valueEnd: number;
  readonly numbers: readonly string[];
  /** The label and the words after it (`glucose luc doi`). */
  readonly labelText: string;
  readonly weak: boolean;
}

function readingsOf(
  text: FoldedText,
  strong: readonly string[],
  weak: readonly string[],
  pair = false,
): Reading[] {
  const out: Reading[] = [];
  const f = text.folded;
  for (const [labels, isWeak] of [
    [strong, false],
    [weak, true],
  ] as const) {
    if (labels.length === 0) continue;
    for (const m of f.matchAll(labelPattern(labels))) {
      const labelEnd = m.index + m[0].length;
      const valueStart = gapEnd(f, labelEnd);
      if (valueStart - labelEnd > MAX_GAP_CHARS) continue;
      const value = matchAt(pair ? PAIR : NUMBER, f, valueStart);
      if (value === null || (pair && digitsFollow(f, valueStart + value[0].length))) continue;
      out.push({
        labelStart: m.index,
        valueStart,
        valueEnd: valueStart + value[0].length,
        numbers: pair ? [value[1] ?? '', value[2] ?? ''] : [value[0]],
        labelText: f.slice(m.index, valueStart),
        weak: isWeak,
      });
    }
  }
  return out;
}

function unitLikeAfter(folded: string, at: number): boolean {
  return matchAt(OTHER_UNIT, folded, at) !== null;
}

// ---------------------------------------------------------------------------------------------
// Vitals.

function temperatureDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  const candidates: { from: number; valueStart: number; number: string; weak: boolean }[] = [];
  for (const r of readingsOf(text, TEMPERATURE_STRONG, TEMPERATURE_WEAK))
    candidates.push({
      from: r.labelStart,
      valueStart: r.valueStart,
      number: r.numbers[0] ?? '',
      weak: r.weak,
    });
  // Unlabelled: a number with a degree mark and a scale (`39°C`, `39oC`, `102 độ F`) or `39°`.
  const unlabelled =
    /(?<![\p{L}\p{N}.,])\d{2,3}(?:[.,]\d{1,2})?(?=\s?(?:°|(?:o|do|degrees?|deg\.?)\s?(?:c|f|celsius|fahrenheit)(?![\p{L}])))/gu;
  for (const m of f.matchAll(unlabelled))
    candidates.push({ from: m.index, valueStart: m.index, number: m[0], weak: false });

  for (const c of candidates) {
    let number = c.number;
    let valueEnd = c.valueStart + number.length;
    let unit = unitAt(f, valueEnd, [{ re: TEMPERATURE_UNIT, written: '' }]);
    // "390C", "38,50C": a zero typed for the degree sign.
    if (unit !== null && number.endsWith('0') && number.length >= 3) {
      const value = parseNumber(number);
      const shorter = parseNumber(number.slice(0, -1));
      if (impossibility('temperature', value) !== null && impossibility('temperature', shorter) === null) {
        number = number.slice(0, -1);
        valueEnd -= 1;
        unit = unitAt(f, valueEnd, [{ re: TEMPERATURE_UNIT, written: '' }]);
      }
    }
    if (unit === null && unitLikeAfter(f, valueEnd)) continue;
    const scaleWritten = unit?.match[1];
    const scale = scaleWritten === undefined ? null : scaleWritten.startsWith('f') ? 'F' : 'C';
    const value = parseNumber(number);
    if (!Number.isFinite(value)) continue;
    const to = unit?.end ?? valueEnd;
    const base = { kind: 'vital' as const, name: 'temperature', from: c.from, to, unit: '°C' };
    if (scale === 'F') {
      const celsius = round(fahrenheitToCelsius(value));
      drafts.push(
        withLimit({ ...base, value: celsius, written: { value, unit: '°F' } }, 'temperature', celsius),
      );
      continue;
    }
    if (scale === 'C') {
      drafts.push(withLimit({ ...base, value }, 'temperature', value));
      continue;
    }
    // No scale written (`39 độ`, `T 38.5`): Celsius when possible, else Fahrenheit when that is.
    if (impossibility('temperature', value) === null) {
      drafts.push({ ...base, value, unitInferred: true });
    } else if (impossibility('temperature', fahrenheitToCelsius(value)) === null && !c.weak) {
      drafts.push({
        ...base,
        value: round(fahrenheitToCelsius(value)),
        written: { value, unit: '°F' },
        unitInferred: true,
      });
    } else if (!c.weak) {
      drafts.push(withLimit({ ...base, value, unitInferred: true }, 'temperature', value));
    }
  }
  return drafts;
}

function bloodPressureDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  const candidates = readingsOf(text, BP_STRONG, [], true).map((r) => ({
    from: r.labelStart,
    valueEnd: r.valueEnd,
    numbers: r.numbers,
    labelled: true,
  }));
  for (const m of f.matchAll(/(?<![\p{L}\p{N}.,/])(\d{2,3})\s?\/\s?(\d{1,3})(?=\s?mm\s?hg(?![\p{L}]))/gu))
    candidates.push({
      from: m.index,
      valueEnd: m.index + m[0].length,
      numbers: [m[1] ?? '', m[2] ?? ''],
      labelled: false,
    });
  for (const c of candidates) {
    const unit = unitAt(f, c.valueEnd, [MMHG]);
    if (unit === null && unitLikeAfter(f, c.valueEnd)) continue;
    const systolic = parseNumber(c.numbers[0] ?? '');
    const diastolic = parseNumber(c.numbers[1] ?? '');
    const to = unit?.end ?? c.valueEnd;
    const base = { kind: 'vital' as const, from: c.from, to, unit: 'mmHg' };
    const inferred = unit === null ? { unitInferred: true as const } : {};
    const sys: Draft = withLimit(
      { ...base, ...inferred, name: 'systolic blood pressure', value: systolic },
      'systolic blood pressure',
      systolic,
    );
    let dia: Draft = withLimit(
      { ...base, ...inferred, name: 'diastolic blood pressure', value: diastolic },
      'diastolic blood pressure',
      diastolic,
    );
    if (dia.implausible === undefined && diastolic >= systolic)
      dia = { ...dia, implausible: `diastolic ${diastolic} mmHg is not below systolic ${systolic} mmHg` };
    drafts.push(sys, dia);
  }
  return drafts;
}

function simpleDrafts(text: FoldedText, rule: SimpleRule): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  const candidates: { from: number; valueEnd: number; number: string; weak: boolean }[] = readingsOf(
    text,
    rule.strong,
    rule.weak,
  ).map((r) => ({ from: r.labelStart, valueEnd: r.valueEnd, number: r.numbers[0] ?? '', weak: r.weak }));
  if (rule.unlabelledUnits !== undefined) {
    for (const m of f.matchAll(/(?<![\p{L}\p{N}.,/])\d+(?:[.,]\d+)?/gu)) {
      if (unitAt(f, m.index + m[0].length, rule.unlabelledUnits) !== null)
        candidates.push({ from: m.index, valueEnd: m.index + m[0].length, number: m[0], weak: false });
    }
  }
  for (const c of candidates) {
    const unit = unitAt(
      f,
      c.valueEnd,
      rule.units.map((x) => x.def),
    );
    if (unit === null && unitLikeAfter(f, c.valueEnd)) continue;
    const written = parseNumber(c.number, rule.count === true);
    if (!Number.isFinite(written)) continue;
    const to = unit?.end ?? c.valueEnd;
    const base = { kind: rule.kind, name: rule.name, from: c.from, to };
    if (unit === null) {
      if (rule.impliedUnit) {
        const draft = { ...base, value: written, unit: rule.normalUnit, unitInferred: true as const };
        if (impossibility(rule.limit, written) === null) drafts.push(draft);
        else if (!c.weak) drafts.push(withLimit(draft, rule.limit, written));
      } else if (rule.count === true && written >= 10_000) {
        // A count of ten thousand or more can only be per µL (10 000 × 10⁹/L is impossible).
        const value = round(written * 0.001);
        drafts.push(
          withLimit(
            {
              ...base,
              value,
              unit: rule.normalUnit,
              written: { value: written, unit: '/µL' },
              unitInferred: true,
            },
            rule.limit,
            value,
          ),
        );
      } else if (!c.weak) {
        drafts.push({ ...base, value: written });
      }
      continue;
    }
    const factor = rule.units.find((x) => x.def === unit.def)?.factor ?? 1;
    const value = round(written * factor);
    const draft =
      unit.def.written === rule.normalUnit
        ? { ...base, value, unit: rule.normalUnit }
        : { ...base, value, unit: rule.normalUnit, written: { value: written, unit: unit.def.written } };
    drafts.push(withLimit(draft, rule.limit, value));
  }
  return drafts;
}

function heightDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  for (const r of readingsOf(text, HEIGHT_STRONG, HEIGHT_WEAK)) {
    const number = r.numbers[0] ?? '';
    const whole = parseNumber(number);
    const base = { kind: 'vital' as const, name: 'height', from: r.labelStart, unit: 'cm' };
    // "1m65", "1 m 65"
    const mcm = matchAt(/\s?m\s?(\d{2})(?![\p{L}\p{N}])/uy, f, r.valueEnd);
    if (mcm !== null && /^\d$/.test(number)) {
      const cm = whole * 100 + parseNumber(mcm[1] ?? '');
      drafts.push(
        withLimit(
          { ...base, to: r.valueEnd + mcm[0].length, value: cm, written: { value: cm / 100, unit: 'm' } },
          'height',
          cm,
        ),
      );
      continue;
    }
    // 5'6", 5 ft 6 in
    const ftin = matchAt(
      /\s?(?:'|ft|feet|foot)\s?(\d{1,2})?\s?(?:"|''|in|inch|inches)?(?![\p{L}\p{N}])/uy,
      f,
      r.valueEnd,
    );
    if (ftin !== null && /^\d$/.test(number)) {
      const inches = whole * 12 + (ftin[1] === undefined ? 0 : parseNumber(ftin[1]));
      const cm = round(inches * IN_TO_CM, 1);
      drafts.push(
        withLimit(
          { ...base, to: r.valueEnd + ftin[0].length, value: cm, written: { value: inches, unit: 'in' } },
          'height',
          cm,
        ),
      );
      continue;
    }
    const unit = unitAt(f, r.valueEnd, [
      u(`cm${END}`, 'cm'),
      u(`(?:m|met|meters?|metres?)${END}`, 'm'),
      u(`(?:in|inch|inches)${END}`, 'in'),
    ]);
    if (unit === null) {
      if (r.weak || unitLikeAfter(f, r.valueEnd)) continue;
      const cm = whole < 3 ? round(whole * 100, 1) : whole;
      const draft = { ...base, to: r.valueEnd, value: cm, unitInferred: true as const };
      drafts.push(withLimit(draft, 'height', cm));
      continue;
    }
    const cm =
      unit.def.written === 'm'
        ? round(whole * 100, 1)
        : unit.def.written === 'in'
          ? round(whole * IN_TO_CM, 1)
          : whole;
    const draft =
      unit.def.written === 'cm'
        ? { ...base, to: unit.end, value: cm }
        : { ...base, to: unit.end, value: cm, written: { value: whole, unit: unit.def.written } };
    drafts.push(withLimit(draft, 'height', cm));
  }
  return drafts;
}

// Glucose and creatinine: two conventional units in use, so the value stays in the unit written
// and the other is given as `converted`.

function glucoseDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  for (const r of readingsOf(text, GLUCOSE_STRONG, GLUCOSE_WEAK)) {
    const unit = unitAt(f, r.valueEnd, [MG_DL, MMOL_L]);
    if (unit === null && (r.weak || unitLikeAfter(f, r.valueEnd))) continue;
    const value = parseNumber(r.numbers[0] ?? '');
    if (!Number.isFinite(value)) continue;
    const fasting = /(?:^|[^\p{L}])(?:luc doi|doi|fasting|fpg|fbg|fbs)(?:$|[^\p{L}])/u.test(r.labelText);
    const base = { kind: 'lab' as const, name: fasting ? 'fasting glucose' : 'glucose', from: r.labelStart };
    if (unit === null) {
      drafts.push({ ...base, to: r.valueEnd, value });
      continue;
    }
    const mmol = unit.def === MMOL_L ? value : value / GLUCOSE_MG_DL_PER_MMOL_L;
    const converted: Quantity =
      unit.def === MMOL_L
        ? { value: round(value * GLUCOSE_MG_DL_PER_MMOL_L, 0), unit: 'mg/dL' }
        : { value: round(mmol, 1), unit: 'mmol/L' };
    drafts.push(
      withLimit(
        { ...base, to: unit.end, value, unit: unit.def.written, converted },
        'glucose mmol/L',
        mmol,
        value,
      ),
    );
  }
  return drafts;
}

function creatinineDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  for (const r of readingsOf(text, CREATININE_STRONG, CREATININE_WEAK)) {
    const unit = unitAt(f, r.valueEnd, [UMOL_L, CREAT_MG_DL]);
    if (unit === null && (r.weak || unitLikeAfter(f, r.valueEnd))) continue;
    const value = parseNumber(r.numbers[0] ?? '');
    if (!Number.isFinite(value)) continue;
    const base = { kind: 'lab' as const, name: 'creatinine', from: r.labelStart };
    if (unit === null) {
      drafts.push({ ...base, to: r.valueEnd, value });
      continue;
    }
    const umol = unit.def === UMOL_L ? value : value * CREATININE_UMOL_L_PER_MG_DL;
    const converted: Quantity =
      unit.def === UMOL_L
        ? { value: round(value / CREATININE_UMOL_L_PER_MG_DL, 2), unit: 'mg/dL' }
        : { value: round(umol, 0), unit: 'µmol/L' };
    drafts.push(
      withLimit(
        { ...base, to: unit.end, value, unit: unit.def.written, converted },
        'creatinine umol/L',
        umol,
        value,
      ),
    );
  }
  return drafts;
}

/** HbA1c in IFCC units (mmol/mol) stays as written: no conversion to %. */
function hba1cIfccDrafts(text: FoldedText): Draft[] {
  const rule = SIMPLE_RULES.find((r) => r.name === 'hba1c');
  if (rule === undefined) return [];
  const drafts: Draft[] = [];
  for (const r of readingsOf(text, rule.strong, [])) {
    const unit = unitAt(text.folded, r.valueEnd, [HBA1C_MMOL_MOL]);
    if (unit === null) continue;
    const value = parseNumber(r.numbers[0] ?? '');
    drafts.push(
      withLimit(
        { kind: 'lab', name: 'hba1c', from: r.labelStart, to: unit.end, value, unit: 'mmol/mol' },
        'hba1c mmol/mol',
        value,
      ),
    );
  }
  return drafts;
}

// ---------------------------------------------------------------------------------------------
// The pass.

/** Vitals, labs, age, sex and duration in the text (no lexicon, no context). */
export function extractMeasurements(input: string | FoldedText): ExtractedFinding[] {
  const text = typeof input === 'string' ? foldText(input) : input;
  const measured = [
    ...temperatureDrafts(text),
    ...bloodPressureDrafts(text),
    ...SIMPLE_RULES.flatMap((rule) => simpleDrafts(text, rule)),
    ...hba1cIfccDrafts(text),
    ...heightDrafts(text),
    ...glucoseDrafts(text),
    ...creatinineDrafts(text),
  ];
  // One reading per stretch of text: the longest wins (a labelled reading over the bare unit
  // match inside it); blood pressure's two findings share their span.
  const keptMeasures = keepLongestGroups(measured);
  const others = [...ageDrafts(text), ...sexDrafts(text), ...durationDrafts(text)];
  const measuredSpans = new SpanSet(keptMeasures.map(span));
  for (const k of keptMeasures) measuredSpans.add(span(k));
  const keptOthers = keepLongestGroups(others).filter((d) => !measuredSpans.overlapsAny(span(d)));
  return [...keptMeasures, ...keptOthers]
    .map((d) => toFinding(text, d))
    .sort((a, b) => a.start - b.start || a.end - b.end || a.name.localeCompare(b.name));
}

const span = (d: Draft): Span => ({ start: d.from, end: d.to });

/** keepLongest over spans, keeping every draft that shares a kept span (blood pressure). */
function keepLongestGroups(drafts: readonly Draft[]): Draft[] {
  const spans = new Set(keepLongest(drafts.map(span)).map((s) => `${s.start}:${s.end}`));
  const seen = new Set<string>();
  const out: Draft[] = [];
  for (const d of drafts) {
    const key = `${d.from}:${d.to}:${d.name}`;
    if (seen.has(key)) continue;
    if (!spans.has(`${d.from}:${d.to}`)) continue;
    seen.add(key);
    out.push(d);
  }
  return out;
}

function toFinding(text: FoldedText, draft: Draft): ExtractedFinding {
  const { from, to, ...rest } = draft;
  const range = sourceRange(text, from, to);
  const end = trimEnd(text.source, range.start, range.end);
  return {
    ...rest,
    text: text.source.slice(range.start, end),
    start: range.start,
    end,
    present: true,
    certainty: 1,
    source: 'rules',
  };
}

function trimEnd(source: string, start: number, end: number): number {
  let e = end;
  while (e > start && /[\s:=(,~-]/u.test(source[e - 1] ?? '')) e--;
  return e;
}

export interface RuleOptions {
  /** Symptom, sign and history terms; default `BASE_LEXICON`. */
  readonly lexicon?: readonly LexiconEntry[];
}

export interface RuleResult {
  readonly findings: readonly ExtractedFinding[];
  readonly family: readonly ExtractedFinding[];
}

/**
 * The whole rule pass: measurements, plus the lexicon's terms with their context (negated, hedged,
 * historical; a relative's go to `family`).
 */
export function extractRuleFindings(input: string, options: RuleOptions = {}): RuleResult {
  const text = foldText(input);
  const measurements = extractMeasurements(text);
  const matches = matchLexicon(text, options.lexicon);
  const cues = findCues(text, matches);
  const findings: ExtractedFinding[] = [...measurements];
  const family: ExtractedFinding[] = [];
  for (const m of matches) {
    const raw: ExtractedFinding = {
      text: input.slice(m.start, m.end),
      start: m.start,
      end: m.end,
      kind: m.kind,
      name: m.name,
      present: true,
      certainty: 1,
      ...(m.id === undefined ? {} : { feature: m.id }),
      source: 'rules',
    };
    const placed = applyContext(input, raw, cues, { trustFinding: false, named: true });
    (placed.family ? family : findings).push(placed.finding);
  }
  const order = (a: ExtractedFinding, b: ExtractedFinding): number =>
    a.start - b.start || a.end - b.end || a.name.localeCompare(b.name);
  return { findings: findings.sort(order), family: family.sort(order) };
}
