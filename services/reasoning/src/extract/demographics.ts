/**
 * Age, sex and the illness's duration in the rule pass (Vietnamese and English, on folded text):
 * `45 tuổi`, `bé 3 tháng`, `nam 60t`, `a 45-year-old woman`, `sốt 3 ngày nay`, `for two weeks`;
 * not frequencies, clock times or gestational ages.
 */
import { withLimit, type Draft } from './draft.js';
import { DURATION_UNITS, WORD_NUMBERS, YOUNG_UNIT } from './rule-tables.js';
import { sourceRange, writtenMatches, type FoldedText } from './text.js';
import { parseNumber, round } from './units.js';

const AGE_YEARS =
  /(?<![\p{L}\p{N}.,])(\d{1,3})\s?-?\s?(?:tuoi|years?[\s-]?old|yrs?[\s-]?old|y\/o|y\.o\.?|yo|yr\.? old)(?![\p{L}])/gu;
const AGE_YOUNG =
  /(?<![\p{L}\p{N}.,])(\d{1,2})\s?-?\s?(thang|tuan|ngay|months?|mos?|weeks?|wks?|days?)[\s-]?(?:tuoi|old)(?![\p{L}])/gu;
const AGE_LABEL = /(?<![\p{L}])(?:tuoi|age|aged)\s?[:=]?\s?(\d{1,3})(?![\p{L}\p{N}]|[.,]\d)/gu;

export function ageDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  const base = { kind: 'demographic' as const, name: 'age', unit: 'year' };
  for (const m of f.matchAll(AGE_YEARS)) {
    const value = Number(m[1]);
    drafts.push(withLimit({ ...base, from: m.index, to: m.index + m[0].length, value }, 'age', value));
  }
  for (const m of f.matchAll(AGE_LABEL)) {
    const value = Number(m[1]);
    drafts.push(withLimit({ ...base, from: m.index, to: m.index + m[0].length, value }, 'age', value));
  }
  for (const m of f.matchAll(AGE_YOUNG)) {
    const n = Number(m[1]);
    const key = (m[2] ?? '').replace(/s$/, '');
    const young = YOUNG_UNIT[key];
    if (young === undefined) continue;
    drafts.push({
      ...base,
      from: m.index,
      to: m.index + m[0].length,
      value: round(n / young.perYear),
      written: { value: n, unit: young.unit },
    });
  }
  return drafts;
}

const SEX_VI = /(?<![\p{L}\p{N}])(nam|nu)(?![\p{L}\p{N}])/gu;
const SEX_CHILD_VI = /(?<![\p{L}\p{N}])(?:be|chau|tre)\s(trai|gai)(?![\p{L}\p{N}])/gu;
const SEX_EN = /(?<![\p{L}\p{N}])(male|female|man|woman|boy|girl|gentleman|lady|m|f)(?![\p{L}\p{N}])/gu;
const SEX_LABEL_BEFORE = /(?:gioi tinh|gioi|phai|sex|gender)\s?[:=]?\s?$/u;
const SUBJECT_BEFORE = /(?:^|[^\p{L}])(?:benh nhan|bn|nguoi benh|patient|pt|a|an|the|this)\s$/u;
const AGE_BEFORE = /\d{1,3}\s?-?\s?(?:tuoi|years?[\s-]?old|yrs?[\s-]?old|y\/o|y\.o\.?|yo)\s?,?\s?$/u;
const AGE_AFTER = /^\s?[,(]?\s?\d{1,3}\s?-?\s?(?:tuoi|years?|yrs?|y\/o|yo)/u;
const CLAUSE_START_BEFORE = /(?:^|[.;:\n]\s?)$/u;

export function sexDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  const sexOf = (w: string): 'male' | 'female' =>
    ['nam', 'trai', 'male', 'man', 'boy', 'gentleman', 'm'].includes(w) ? 'male' : 'female';
  const accept = (from: number, to: number, word: string): void => {
    drafts.push({ kind: 'demographic', name: sexOf(word), from, to });
  };
  for (const m of f.matchAll(SEX_VI)) {
    const word = m[1] ?? '';
    const range = sourceRange(text, m.index, m.index + m[0].length);
    if (!writtenMatches(word === 'nam' ? 'nam' : 'nữ', text.source.slice(range.start, range.end))) continue;
    const before = f.slice(Math.max(0, m.index - 30), m.index);
    const after = f.slice(m.index + m[0].length, m.index + m[0].length + 20);
    // A number just before makes "nam" the diacritic-free "năm" (year), unless it is an age.
    const ageBefore = /\d{1,3}\s?-?\s?tuoi\s?,?\s?$/u.test(before);
    if (/\d\s?$/u.test(before) && !ageBefore) continue;
    if (sexWordInContext(before, after, ageBefore)) accept(m.index, m.index + m[0].length, word);
  }
  for (const m of f.matchAll(SEX_CHILD_VI)) {
    const word = m[1] ?? '';
    const range = sourceRange(text, m.index, m.index + m[0].length);
    const last = text.source.slice(range.start, range.end).split(/\s+/u).pop() ?? '';
    if (writtenMatches(word === 'trai' ? 'trai' : 'gái', last)) accept(m.index, m.index + m[0].length, word);
  }
  for (const m of f.matchAll(SEX_EN)) {
    const word = m[1] ?? '';
    const range = sourceRange(text, m.index, m.index + m[0].length);
    if (!writtenMatches(word, text.source.slice(range.start, range.end))) continue;
    const before = f.slice(Math.max(0, m.index - 30), m.index);
    const after = f.slice(m.index + m[0].length, m.index + m[0].length + 20);
    const ageBefore = AGE_BEFORE.test(before);
    if (word === 'm' || word === 'f') {
      if (ageBefore || SEX_LABEL_BEFORE.test(before)) accept(m.index, m.index + 1, word);
      continue;
    }
    if (sexWordInContext(before, after, ageBefore)) accept(m.index, m.index + m[0].length, word);
  }
  return drafts;
}

/**
 * Whether a sex word reads as the patient's sex where it stands: after a label ("giới:", "sex:"), a
 * subject ("bệnh nhân", "a"), an age, at a clause start, or before an age.
 */
function sexWordInContext(before: string, after: string, ageBefore: boolean): boolean {
  return (
    SEX_LABEL_BEFORE.test(before) ||
    SUBJECT_BEFORE.test(before) ||
    ageBefore ||
    AGE_AFTER.test(after) ||
    CLAUSE_START_BEFORE.test(before)
  );
}

const UNIT_ALT = Object.keys(DURATION_UNITS)
  .sort((a, b) => b.length - a.length)
  .join('|');
const NUM_ALT = `\\d{1,3}(?:[.,]5)?|${WORD_NUMBERS.map(([w]) => w).join('|')}`;
const DURATION = new RegExp(
  `(?<![\\p{L}\\p{N}.,/])(${NUM_ALT})(?:\\s?(?:-|den|toi|to)\\s?(\\d{1,3}))?(?:\\s?-\\s?|\\s)?(${UNIT_ALT})(?![\\p{L}\\p{N}/])(?!\\s?-?\\s?(?:tuoi|old|-old))`,
  'gu',
);
const DAY_OF_ILLNESS =
  /(?<![\p{L}])(?:ngay thu|ngay benh thu|day)\s?(\d{1,2})(?:\s?(?:cua benh|of (?:illness|fever|symptoms)))?(?![\p{L}\p{N}])/gu;
/** Not a duration: a frequency ("2 lần một ngày", "twice a day", "mỗi 2 ngày") or a clock time ("lúc 2h"). */
/** Gestational age, not an illness's duration: "28 weeks pregnant", "thai 28 tuần". */
const NOT_DURATION_AFTER = /^\s?(?:pregnant|gestation|of gestation|of pregnancy|gestational)(?![\p{L}])/u;
const NOT_DURATION_BEFORE =
  /(?:^|[^\p{L}])(?:lan|times|twice|once|thrice|moi|per|every|each|q|luc|vao luc|at)\s$/u;

export function durationDrafts(text: FoldedText): Draft[] {
  const f = text.folded;
  const drafts: Draft[] = [];
  for (const m of f.matchAll(DURATION)) {
    const numberWord = m[1] ?? '';
    const unitWord = m[3] ?? '';
    const before = f.slice(Math.max(0, m.index - 12), m.index);
    if (NOT_DURATION_BEFORE.test(before)) continue;
    const isWord = /^\p{L}/u.test(numberWord);
    if (isWord && !/^\p{L}+\s/u.test(m[0])) continue;
    // One-letter units only stuck to a digit ("24h", "3d").
    if ((unitWord === 'h' || unitWord === 'd') && (isWord || /\s$/u.test(m[0].slice(0, m[0].length - 1))))
      continue;
    // Written-out numbers and "nam" (năm) must be written as the word, with or without diacritics.
    const range = sourceRange(text, m.index, m.index + m[0].length);
    const written = text.source.slice(range.start, range.end).split(/\s+/u);
    let value: number;
    if (isWord) {
      const entry = WORD_NUMBERS.find(([w]) => w === numberWord);
      if (entry === undefined || !writtenMatches(entry[1], written[0] ?? '')) continue;
      if ((numberWord === 'a' || numberWord === 'an') && m[2] !== undefined) continue;
      value = entry[2];
    } else {
      value = parseNumber(numberWord);
    }
    const [unit, unitWritten] = DURATION_UNITS[unitWord] ?? ['day', 'day'];
    const lastWord = written[written.length - 1] ?? '';
    if (!writtenMatches(unitWritten, lastWord.slice(Math.max(0, lastWord.length - unitWritten.length))))
      continue;
    if (NOT_DURATION_AFTER.test(f.slice(m.index + m[0].length, m.index + m[0].length + 24))) continue;
    if (/(?:^|[^\p{L}])(?:thai|tuoi thai)\s$/u.test(before)) continue;
    const high = m[2] === undefined ? undefined : Number(m[2]);
    drafts.push({
      kind: 'duration',
      name: 'duration',
      from: m.index,
      to: m.index + m[0].length,
      value,
      unit,
      ...(high === undefined || high <= value ? {} : { valueHigh: high }),
    });
  }
  for (const m of f.matchAll(DAY_OF_ILLNESS)) {
    if (m[0].startsWith('day') && !/of (?:illness|fever|symptoms)/u.test(m[0])) continue;
    drafts.push({
      kind: 'duration',
      name: 'duration',
      from: m.index,
      to: m.index + m[0].length,
      value: Number(m[1]),
      unit: 'day',
    });
  }
  return drafts;
}
