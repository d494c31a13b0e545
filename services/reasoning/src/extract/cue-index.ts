/**
 * The tables that make a finding's context cheap to find in any text (see `CueIndex`): built once
 * per `findCues` result and kept with it. Pure.
 */
import { lowerBound, type Span } from './terms.js';
import { ALL_SCOPES, type Scoped } from './negation-cues.js';
import type { Cue } from './negation.js';

export type ScopedCue = Cue & { readonly category: Scoped };

export function isScoped(cue: Cue): cue is ScopedCue {
  const category = cue.category;
  return (
    category === 'negation' || category === 'uncertainty' || category === 'history' || category === 'family'
  );
}

function isTrigger(category: Scoped): boolean {
  return category === 'negation' || category === 'uncertainty';
}

/**
 * Sentence ends and bullets, in one pass: `.` not inside a number, `;`, `!`, `?`, and each line break
 * read with the blanks after it and the bullet mark there, if any (group 2). A line break ends a
 * sentence unless it opens a bullet.
 */
const BREAKS = /[;!?]|\.(?!\d)|\n([ \t]*)([-*•+])?/gu;
const WORDS = /[\p{L}\p{N}]+/gu;

/** Past any offset. */
const NONE = 0x7fffffff;

/** Cues by text order (start), with the smallest end among a cue and every cue after it. */
interface Ordered {
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  readonly minEndFrom: Int32Array;
}

function ordered(list: readonly Span[]): Ordered {
  const starts = Int32Array.from(list, (c) => c.start);
  const ends = Int32Array.from(list, (c) => c.end);
  const minEndFrom = new Int32Array(list.length + 1).fill(NONE);
  for (let i = list.length - 1; i >= 0; i--)
    minEndFrom[i] = Math.min(ends[i] ?? NONE, minEndFrom[i + 1] ?? NONE);
  return { starts, ends, minEndFrom };
}

/** Whether a cue lies wholly inside [from, to]. */
function anyInside(cues: Ordered, from: number, to: number): boolean {
  return (cues.minEndFrom[lowerBound(cues.starts, from)] ?? NONE) <= to;
}

/**
 * A text's cues with the tables that make a finding's context cost O(log n) plus the cues within
 * reach of it, whatever the text: its sentence ends, list breaks and words as offsets and prefix
 * counts (so "words between a cue and the finding" is two lookups), and the scoped cues grouped
 * by window, so only those near enough to act are tried. Without them a text with no sentence
 * break (20,000 characters of "không sốt, ") tested every finding against every cue of the text,
 * re-reading the text between them each time: minutes of CPU for one request.
 *
 * It answers as the definitions read on the text between a cue and a finding (a `.` that ends
 * that stretch ends the sentence there even before a digit; a line break at its end opens no
 * bullet). `cues` are in text order, as `findCues` returns them.
 */
class CueIndex {
  readonly #source: string;
  /** Every cue, by start. */
  readonly #cues: readonly Cue[];
  /** Sentence ends (`SENTENCE_ENDS` on the whole text). */
  readonly #sentenceEnds: Int32Array;
  /** Per offset: sentence ends before it. */
  readonly #sentenceEndsBefore: Int32Array;
  /** Per offset: commas before it. */
  readonly #commasBefore: Int32Array;
  /** Line breaks that open a bullet, and where each bullet is (increasing with the break). */
  readonly #bulletBreaks: Int32Array;
  readonly #bullets: Int32Array;
  /** Per offset: where the run of spaces and tabs that ends there starts. */
  readonly #blankFrom: Int32Array;
  /** Per offset: words that start before it, and words that end at or before it. */
  readonly #wordsStartedBefore: Int32Array;
  readonly #wordsEndedBy: Int32Array;
  readonly #wordStarts: number[] = [];
  readonly #wordEnds: number[] = [];
  /** Termination cues stopping each scope, and all of them; conjunctions. */
  readonly #stops = new Map<Scoped, Ordered>();
  readonly #terminations: Ordered;
  readonly #conjunctions: Ordered;
  /** Scoped cues by window: positions in `#cues` by start and by end. */
  readonly #byWindow: {
    window: number;
    byStart: number[];
    starts: Int32Array;
    byEnd: number[];
    ends: Int32Array;
  }[] = [];

  constructor(source: string, cues: readonly Cue[]) {
    this.#source = source;
    const n = source.length;
    // Stable: cues already in text order stay in their order.
    this.#cues = [...cues].sort((a, b) => a.start - b.start);

    const sentenceEnds: number[] = [];
    const breaks: number[] = [];
    const bullets: number[] = [];
    for (const m of source.matchAll(BREAKS)) {
      if (m[2] === undefined) {
        sentenceEnds.push(m.index);
      } else {
        breaks.push(m.index);
        bullets.push(m.index + 1 + (m[1] ?? '').length);
      }
    }
    this.#sentenceEnds = Int32Array.from(sentenceEnds);
    this.#sentenceEndsBefore = countsBefore(n, sentenceEnds);
    const commas: number[] = [];
    for (let i = source.indexOf(','); i >= 0; i = source.indexOf(',', i + 1)) commas.push(i);
    this.#commasBefore = countsBefore(n, commas);
    this.#bulletBreaks = Int32Array.from(breaks);
    this.#bullets = Int32Array.from(bullets);
    this.#blankFrom = new Int32Array(n + 1);
    for (let i = 1; i <= n; i++) {
      const ch = source.charCodeAt(i - 1);
      this.#blankFrom[i] = ch === 0x20 || ch === 0x09 ? (this.#blankFrom[i - 1] ?? 0) : i;
    }
    for (const m of source.matchAll(WORDS)) {
      this.#wordStarts.push(m.index);
      this.#wordEnds.push(m.index + m[0].length);
    }
    this.#wordsStartedBefore = countsBefore(n, this.#wordStarts);
    this.#wordsEndedBy = countsBefore(n, this.#wordEnds, true);

    const terminations = this.#cues.filter((c) => c.category === 'termination');
    for (const scope of ALL_SCOPES)
      this.#stops.set(scope, ordered(terminations.filter((c) => c.stops.includes(scope))));
    this.#terminations = ordered(terminations);
    this.#conjunctions = ordered(this.#cues.filter((c) => c.category === 'conjunction'));

    const windows = new Map<number, number[]>();
    this.#cues.forEach((c, i) => {
      if (!isScoped(c)) return;
      const group = windows.get(c.window) ?? [];
      group.push(i);
      windows.set(c.window, group);
    });
    const cueAt = (i: number): Span => this.#cues[i] ?? { start: NONE, end: NONE };
    for (const [window, byStart] of windows) {
      const byEnd = [...byStart].sort((a, b) => cueAt(a).end - cueAt(b).end);
      this.#byWindow.push({
        window,
        byStart,
        starts: Int32Array.from(byStart, (i) => cueAt(i).start),
        byEnd,
        ends: Int32Array.from(byEnd, (i) => cueAt(i).end),
      });
    }
  }

  get source(): string {
    return this.#source;
  }

  /** The scoped cues that act on the finding at `span`, in text order. */
  reaching(span: Span): ScopedCue[] {
    // Only the cues of the finding's sentence (and those touching it, as a `?`) can reach it.
    const lo = this.#sentenceStart(span.start);
    const hi = this.#sentenceEndAt(span.end);
    const candidates = new Set<number>();
    for (const group of this.#byWindow) {
      // Before the finding: ending in its sentence, at most `window` words before it.
      const from = Math.max(lo, this.#earliestWithin(span.start, group.window));
      for (let k = lowerBound(group.ends, from); k < group.byEnd.length; k++) {
        const end = group.ends[k] ?? NONE;
        if (end > span.end) break;
        if (end <= span.start || end === span.end) candidates.add(group.byEnd[k] ?? -1);
      }
      // After it (and starting with it): starting in its sentence, at most `window` words after.
      const to = Math.min(hi, this.#latestWithin(span.end, group.window));
      for (let k = lowerBound(group.starts, span.start); k < group.byStart.length; k++) {
        const start = group.starts[k] ?? NONE;
        if (start > to) break;
        if (start === span.start || start >= span.end) candidates.add(group.byStart[k] ?? -1);
      }
    }
    const out: ScopedCue[] = [];
    for (const i of [...candidates].sort((a, b) => a - b)) {
      const cue = this.#cues[i];
      if (cue === undefined || !isScoped(cue) || cue.end < lo || cue.start > hi) continue;
      if (this.#reaches(cue, span, hi)) out.push(cue);
    }
    return out;
  }

  /** Whether a scoped cue acts on the finding at `span`, whose sentence ends at `hi`. */
  #reaches(cue: ScopedCue, span: Span, hi: number): boolean {
    const category = cue.category;
    const forward = cue.direction !== 'backward';
    const backward = cue.direction !== 'forward';
    let gap: Span;
    if (forward && cue.end <= span.start) gap = { start: cue.end, end: span.start };
    else if (backward && cue.start >= span.end) gap = { start: span.end, end: cue.start };
    else if (forward && cue.start === span.start && cue.end < span.end && isTrigger(category)) return true;
    else if (backward && cue.end === span.end && cue.start > span.start && isTrigger(category)) return true;
    else return false;
    if (cue.adjacent && gap.end > gap.start) return false;
    if (this.#words(gap.start, gap.end) > cue.window) return false;
    if (this.#endsSentence(gap.start, gap.end)) return false;
    const stops = this.#stops.get(category);
    if (stops !== undefined && anyInside(stops, gap.start, gap.end)) return false;
    if (this.#breaksList(gap.start, gap.end) && !this.#runsOverCommas(cue, span, hi)) return false;
    return true;
  }

  #runsOverCommas(cue: Cue, span: Span, hi: number): boolean {
    if (cue.category === 'history' || cue.category === 'family' || cue.list) return true;
    if (cue.direction === 'backward' && cue.start >= span.end) return false;
    // An "or" list: a conjunction between the trigger and the end of the finding's clause (the
    // sentence's end, or the first termination term after the finding).
    const next = lowerBound(this.#terminations.starts, span.end);
    const stop = this.#terminations.starts[next];
    const clauseEnd = stop !== undefined && stop < hi ? stop : hi;
    return anyInside(this.#conjunctions, cue.end, clauseEnd);
  }

  /** Words (runs of letters or digits) in source[from, to). */
  #words(from: number, to: number): number {
    if (to <= from) return 0;
    return (this.#wordsStartedBefore[to] ?? 0) - (this.#wordsEndedBy[from] ?? 0);
  }

  /** The earliest offset at or before `to` with at most `window` words between it and `to`. */
  #earliestWithin(to: number, window: number): number {
    const before = this.#wordsStartedBefore[to] ?? 0;
    return before <= window ? 0 : Math.min(to, this.#wordEnds[before - window - 1] ?? 0);
  }

  /** The latest offset at or after `from` with at most `window` words between `from` and it. */
  #latestWithin(from: number, window: number): number {
    const next = this.#wordStarts[(this.#wordsEndedBy[from] ?? 0) + window];
    return next === undefined ? this.#source.length : Math.max(from, next);
  }

  /** Where the sentence holding offset `at` starts (after the last sentence end before it). */
  #sentenceStart(at: number): number {
    const before = this.#sentenceEndsBefore[at] ?? 0;
    let start = before === 0 ? 0 : (this.#sentenceEnds[before - 1] ?? -1) + 1;
    // Read up to `at` only: a `.` just before it ends a sentence even before a digit, and a line
    // break followed only by blanks opens no bullet.
    if (at > 0 && this.#source[at - 1] === '.') start = at;
    const blank = this.#blankFrom[at] ?? at;
    if (blank > 0 && this.#source[blank - 1] === '\n') start = Math.max(start, blank);
    return start;
  }

  /** The first sentence end at or after `at` (the text's end when none is). */
  #sentenceEndAt(at: number): number {
    return this.#sentenceEnds[this.#sentenceEndsBefore[at] ?? 0] ?? this.#source.length;
  }

  /** Whether source[from, to), read alone, holds a sentence end. */
  #endsSentence(from: number, to: number): boolean {
    if (to <= from) return false;
    if ((this.#sentenceEndsBefore[to] ?? 0) > (this.#sentenceEndsBefore[from] ?? 0)) return true;
    if (this.#source[to - 1] === '.') return true;
    const blank = this.#blankFrom[to] ?? to;
    return blank - 1 >= from && this.#source[blank - 1] === '\n';
  }

  /** Whether source[from, to), read alone, holds a list break (a comma, a bullet). */
  #breaksList(from: number, to: number): boolean {
    if (to <= from) return false;
    if ((this.#commasBefore[to] ?? 0) > (this.#commasBefore[from] ?? 0)) return true;
    const k = lowerBound(this.#bulletBreaks, from);
    return (this.#bulletBreaks[k] ?? NONE) < to && (this.#bullets[k] ?? NONE) < to;
  }
}

/** Per offset 0..n, how many of the sorted `offsets` are before it (`atToo`: or at it). */
function countsBefore(n: number, offsets: readonly number[], atToo = false): Int32Array {
  const counts = new Int32Array(n + 1);
  let k = 0;
  for (let i = 0; i <= n; i++) {
    for (let next = offsets[k]; next !== undefined && (next < i || (atToo && next === i)); next = offsets[k])
      k++;
    counts[i] = k;
  }
  return counts;
}

/** The tables of a text's cues, built once per `findCues` result and kept with it. */
const cueIndexes = new WeakMap<readonly Cue[], CueIndex>();

export function cueIndexOf(source: string, cues: readonly Cue[]): CueIndex {
  const known = cueIndexes.get(cues);
  if (known !== undefined && known.source === source) return known;
  const index = new CueIndex(source, cues);
  cueIndexes.set(cues, index);
  return index;
}
