/**
 * Text folding with an offset map, so every rule can match Vietnamese written with or without
 * diacritics (and English in any case) while every finding still points at the characters of the
 * input as written. Pure.
 *
 * The folded form: NFKD (compatibility decomposition: `℃` → `°c`, `⁹` → `9`, full-width digits →
 * ASCII), combining marks removed (`ố` → `o`), `đ` → `d`, lower case, `µ`/`μ` → `u`, `×` → `x`,
 * dashes → `-`, and every run of white space → one space. Each folded UTF-16 unit remembers the
 * range of input it came from; a combining mark in decomposed input widens the range of the letter
 * before it, so a span never cuts a letter from its accent.
 */

export interface FoldedText {
  /** The input, unchanged. */
  readonly source: string;
  readonly folded: string;
  /** For each unit of `folded`: where its input starts. */
  readonly starts: readonly number[];
  /** For each unit of `folded`: where its input ends (exclusive). */
  readonly ends: readonly number[];
}

const SPECIAL: Readonly<Record<string, string>> = {
  '˚': '°',
  º: '°',
  µ: 'u',
  μ: 'u',
  '×': 'x',
  '–': '-',
  '—': '-',
  '−': '-',
  '‐': '-',
  '’': "'",
  '′': "'",
  '″': '"',
  '“': '"',
  '”': '"',
};

const MARKS = /\p{M}/gu;
const SPACE = /^\s+$/u;

function foldCodePoint(cp: string): string {
  const special = SPECIAL[cp];
  if (special !== undefined) return special;
  return cp
    .normalize('NFKD')
    .replace(MARKS, '')
    .replace(/[đĐ]/g, 'd')
    .toLowerCase()
    .replace(MARKS, '')
    .replace(/[µμ]/g, 'u');
}

export function foldText(source: string): FoldedText {
  // Pieces joined once at the end: asking a string built by `+=` for its last character flattens
  // it each time, which made folding quadratic in the length of the text.
  const pieces: string[] = [];
  let afterSpace = false;
  const starts: number[] = [];
  const ends: number[] = [];
  let i = 0;
  for (const cp of source) {
    const end = i + cp.length;
    const out = foldCodePoint(cp);
    if (out === '') {
      // A combining mark (or something that folds to nothing): it belongs to the letter before.
      if (ends.length > 0) ends[ends.length - 1] = end;
    } else if (SPACE.test(out)) {
      if (!afterSpace) {
        pieces.push(' ');
        afterSpace = true;
        starts.push(i);
        ends.push(end);
      }
    } else {
      for (const unit of out) {
        for (let k = 0; k < unit.length; k++) {
          starts.push(i);
          ends.push(end);
        }
        pieces.push(unit);
      }
      afterSpace = out.endsWith(' ');
    }
    i = end;
  }
  return { source, folded: pieces.join(''), starts, ends };
}

const foldedTerms = new Map<string, string>();

/** A term's folded form (trimmed); remembered, as term lists are folded on every text. */
export function foldTerm(term: string): string {
  let folded = foldedTerms.get(term);
  if (folded === undefined) {
    folded = foldText(term).folded.trim();
    if (foldedTerms.size >= 20_000) foldedTerms.clear();
    foldedTerms.set(term, folded);
  }
  return folded;
}

/** The input range of the folded range [start, end). */
export function sourceRange(text: FoldedText, start: number, end: number): { start: number; end: number } {
  if (end <= start) {
    const at = start < text.starts.length ? (text.starts[start] ?? text.source.length) : text.source.length;
    return { start: at, end: at };
  }
  return { start: text.starts[start] ?? text.source.length, end: text.ends[end - 1] ?? text.source.length };
}

/** The folded index of input offset `offset` (the first folded unit at or after it). */
export function foldedIndex(text: FoldedText, offset: number): number {
  // Binary search on starts (non-decreasing).
  let lo = 0;
  let hi = text.starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((text.starts[mid] ?? 0) < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** True when the string carries a Vietnamese (or any) diacritic or `đ`. */
export function hasDiacritics(s: string): boolean {
  return /[\p{M}đĐ]/u.test(s.normalize('NFD'));
}

const ENGLISH_WORDS =
  /(?<![\p{L}])(?:the|and|with|of|for|was|has|had|is|are|she|he|her|his|patient|presents|reports|denies|history)(?![\p{L}])/gu;

/**
 * Whether a text is English (at least three English function words, no Vietnamese diacritic): there
 * a Vietnamese term with diacritics does not match a word written without them ("nôn" in
 * "non-tender", "mệt" in "met").
 */
export function looksEnglish(text: FoldedText): boolean {
  if (hasDiacritics(text.source)) return false;
  let n = 0;
  for (const _ of text.folded.matchAll(ENGLISH_WORDS)) if (++n >= 3) return true;
  return false;
}

/** Lower case, NFC, white space collapsed: how a written form is compared with diacritics kept. */
export function normaliseWritten(s: string): string {
  return s.normalize('NFC').toLowerCase().replace(/\s+/gu, ' ').trim();
}

/**
 * Whether input written as `written` may stand for `term`: the same letters with the same
 * diacritics, or written without any diacritic at all (a writer who types without them). So
 * `co the` matches the term `có thể` but `cơ thể` (the body) does not, and the English `no` never
 * matches the Vietnamese `nó`.
 */
export function writtenMatches(term: string, written: string): boolean {
  if (!hasDiacritics(written)) return true;
  return normaliseWritten(term) === normaliseWritten(written);
}

const WORD_CHAR = /[\p{L}\p{N}]/u;

export function isWordChar(ch: string | undefined): boolean {
  return ch !== undefined && WORD_CHAR.test(ch);
}

/** Whether folded [start, end) sits on word boundaries (where its edges are word characters). */
export function onWordBoundaries(folded: string, start: number, end: number): boolean {
  const first = folded[start];
  const last = folded[end - 1];
  if (isWordChar(first) && isWordChar(folded[start - 1])) return false;
  if (isWordChar(last) && isWordChar(folded[end])) return false;
  return true;
}
