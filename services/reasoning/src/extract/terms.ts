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
    const end = at + needle.length;
    if (!onWordBoundaries(text.folded, at, end)) continue;
    const range = sourceRange(text, at, end);
    const written = text.source.slice(range.start, range.end);
    if (abbreviation ? written !== written.toUpperCase() : !writtenMatches(term, written)) continue;
    found.push({ ...range, term });
  }
  return found;
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
  for (const item of ordered) {
    if (kept.some((k) => overlaps(k, item))) continue;
    kept.push(item);
  }
  return kept.sort((a, b) => a.start - b.start || a.end - b.end);
}

export function overlaps(a: Span, b: Span): boolean {
  return a.start < b.end && b.start < a.end;
}

export function covers(outer: Span, inner: Span): boolean {
  return outer.start <= inner.start && inner.end <= outer.end;
}
