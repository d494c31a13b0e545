/**
 * Finding written terms (words and phrases, vi and en) in folded text: whole words only, with or
 * without diacritics (see `writtenMatches`), abbreviations written in capitals matched only in
 * capitals. Pure.
 */
import { foldTerm, onWordBoundaries, sourceRange, writtenMatches, type FoldedText } from './text.js';

export interface Span {
  readonly start: number;
  readonly end: number;
}

export interface TermOccurrence extends Span {
  /** The term as listed (its canonical written form). */
  readonly term: string;
}

/**
 * A term whose letters are all capitals and that has at least two of them (`THA`, `ĐTĐ`, `TD`,
 * `SOB`) is an abbreviation: it matches only input written in capitals.
 */
export function isAbbreviation(term: string): boolean {
  const letters = term.replace(/[^\p{L}]/gu, '');
  return letters.length >= 2 && letters === letters.toUpperCase() && letters !== letters.toLowerCase();
}

/** Every whole-word occurrence of `term` in the text, as input ranges. */
export function findTerm(text: FoldedText, term: string): TermOccurrence[] {
  const needle = foldTerm(term);
  if (needle === '') return [];
  const abbreviation = isAbbreviation(term);
  const found: TermOccurrence[] = [];
  for (let at = text.folded.indexOf(needle); at >= 0; at = text.folded.indexOf(needle, at + 1)) {
    const occurrence = occurrenceAt(text, term, abbreviation, at, at + needle.length);
    if (occurrence !== null) found.push(occurrence);
  }
  return found;
}

/**
 * The occurrence of `term` whose folded form stands at folded [at, end), when it is a whole word
 * there and written as the term allows (see `writtenMatches`; an abbreviation in capitals only).
 */
export function occurrenceAt(
  text: FoldedText,
  term: string,
  abbreviation: boolean,
  at: number,
  end: number,
): TermOccurrence | null {
  if (!onWordBoundaries(text.folded, at, end)) return null;
  const range = sourceRange(text, at, end);
  const written = text.source.slice(range.start, range.end);
  if (abbreviation ? written !== written.toUpperCase() : !writtenMatches(term, written)) return null;
  return { ...range, term };
}

/**
 * A quick test of whether a term can occur in the text at all: its first word must be one of the
 * text's words (terms that start with punctuation always pass). Saves scanning for the many terms
 * of a list that cannot be there.
 */
export function possibleTerms(text: FoldedText): (term: string) => boolean {
  const words = new Set(text.folded.match(/[\p{L}\p{N}]+/gu) ?? []);
  return (term) => {
    const first = /^[\p{L}\p{N}]+/u.exec(foldTerm(term));
    return first === null || words.has(first[0]);
  };
}

/** Longest first, then leftmost: keeps the items that overlap none kept before them. */
export function keepLongest<T extends Span>(items: readonly T[]): T[] {
  const ordered = [...items].sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start);
  const kept: T[] = [];
  const taken = new SpanSet(items);
  for (const item of ordered) {
    if (taken.overlapsAny(item)) continue;
    taken.add(item);
    kept.push(item);
  }
  return kept.sort((a, b) => a.start - b.start || a.end - b.end);
}

/**
 * A set of spans that answers "does this span overlap any of them?" in O(log n) (testing each
 * in turn made a text of thousands of terms quadratic). Spans are added from those it was built
 * for: a Fenwick tree over their starts keeps the furthest end among the spans added with each
 * start, and a span overlaps one of them exactly when the furthest end among those that start
 * before its end is past its start.
 */
export class SpanSet {
  readonly #starts: number[];
  readonly #tree: number[];

  constructor(spans: readonly Span[]) {
    this.#starts = [...new Set(spans.map((s) => s.start))].sort((a, b) => a - b);
    this.#tree = new Array<number>(this.#starts.length + 1).fill(-Infinity);
  }

  /** Adds a span whose start is one of the spans' the set was built for. */
  add(span: Span): void {
    const at = lowerBound(this.#starts, span.start);
    if (this.#starts[at] !== span.start) throw new RangeError(`span start ${span.start} is not indexed`);
    for (let i = at + 1; i < this.#tree.length; i += i & -i)
      if ((this.#tree[i] ?? -Infinity) < span.end) this.#tree[i] = span.end;
  }

  /** Whether `span` overlaps (see `overlaps`) a span added before. */
  overlapsAny(span: Span): boolean {
    let furthest = -Infinity;
    for (let i = lowerBound(this.#starts, span.end); i > 0; i -= i & -i)
      furthest = Math.max(furthest, this.#tree[i] ?? -Infinity);
    return furthest > span.start;
  }
}

/** The first index of a sorted array whose value is at least `value` (its length when none is). */
export function lowerBound(sorted: ArrayLike<number>, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] ?? value) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function overlaps(a: Span, b: Span): boolean {
  return a.start < b.end && b.start < a.end;
}

export function covers(outer: Span, inner: Span): boolean {
  return outer.start <= inner.start && inner.end <= outer.end;
}
