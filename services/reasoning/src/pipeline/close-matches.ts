/**
 * Close matches of an unknown feature name among a knowledge base's terms (folded names), for the
 * 422 that lists them. Pure.
 *
 * A term's score is its similarity to the name, 1 − Levenshtein distance / the longer length (0
 * when one is more than twice the other's length), raised to 0.75 when one contains the other
 * (names of 3 or more characters); a feature scores its best term; features scoring at least 0.5
 * are offered, best first (then by id), at most `limit`.
 *
 * Measuring the edit distance of the name to every term of the base (an HPO import has tens of
 * thousands) for each of a request's names took minutes of CPU before the 422 (README, "Limits and
 * guarantees"). The index, built once with the base, finds the same matches while measuring few
 * terms:
 * - the pairs of adjacent characters of each term, padded with an end mark on each side: a term
 *   sharing k of them with the name is at least (longer + 1 − k) / 2 edits away (an edit breaks at
 *   most two pairs: Ukkonen's q-gram lemma), so a term sharing none scores below 0.5 and is never
 *   read, and no term sharing k scores above 1/2 + (k − 1) / (2 × the name's length);
 * - the terms containing the name or contained in it come first, then the others by the pairs
 *   they share, most first, until no term left can reach the matches found; each is measured only
 *   when both bounds (the pairs, then the characters it shares) let it, by a bit-parallel edit
 *   distance (Myers 1999) that stops as soon as the term cannot reach them.
 * At most `MAX_MEASURED` edit distances are computed for one name. A name that needs more (one
 * that shares pairs and letters with thousands of terms and is close to none of them) gets the
 * best matches among those measured: weak ones, ranked as above, perhaps not the very best.
 */

export interface ScoredFeature {
  readonly feature: string;
  readonly score: number;
}

export interface IndexedTerm {
  /** The folded name (see `foldTerm`). */
  readonly folded: string;
  readonly feature: string;
}

/** The most edit distances computed for one name. */
export const MAX_MEASURED = 2_000;
/** The least score offered. */
const MIN_SCORE = 0.5;
/** The score of a term that contains the name or that the name contains. */
const CONTAINS = 0.75;
/** The end mark a string is padded with (pairs are of UTF-16 units, as the distance is). */
const MARK = -1;

function pairKey(first: number, second: number): number {
  return (first + 1) * 0x10001 + (second + 1);
}

/** The padded pairs of a string, with how many times each occurs. */
function pairsOf(s: string): Map<number, number> {
  const pairs = new Map<number, number>();
  let previous = MARK;
  for (let i = 0; i <= s.length; i++) {
    const unit = i < s.length ? s.charCodeAt(i) : MARK;
    const key = pairKey(previous, unit);
    pairs.set(key, (pairs.get(key) ?? 0) + 1);
    previous = unit;
  }
  return pairs;
}

// Plain comparisons rather than Math.min / Math.max in the loops below: as fast in Node, and far
// faster where `Math` belongs to another realm (Jest's vm contexts; README, "Limits and guarantees").
const smaller = (a: number, b: number): number => (a < b ? a : b);
const larger = (a: number, b: number): number => (a > b ? a : b);
/** ⌈x / 2⌉ of a non-negative integer. */
const halfUp = (x: number): number => (x + 1) >> 1;

/** The similarity of a pair at distance `distance`, as the score reads it. */
function similarity(distance: number, longer: number): number {
  return 1 - distance / longer;
}

/** The largest distance whose similarity at this length is at least `score` (−1: none). */
function maxDistance(longer: number, score: number): number {
  let d = smaller(longer, Math.floor((1 - score) * longer) + 1);
  while (d >= 0 && similarity(d, longer) < score) d--;
  return d;
}

/**
 * Per block of 32 units of a pattern, per UTF-16 unit: the positions of the block where the unit
 * stands (Myers' Peq, at `block * 0x10000 + unit`; zero between uses).
 */
let pattern = new Int32Array(0x10000);
/** Per UTF-16 unit: how many times it stands in the name searched (zero between searches). */
const NAME_UNITS = new Int32Array(0x10000);
/** Per block: the vertical deltas of the column (Myers' Pv, Mv). */
let plus = new Int32Array(8);
let minus = new Int32Array(8);

function setPattern(p: string, on: boolean): void {
  const blocks = (p.length + 31) >> 5;
  if (on && pattern.length < blocks * 0x10000) pattern = new Int32Array(blocks * 0x10000);
  if (on && plus.length < blocks) {
    plus = new Int32Array(blocks);
    minus = new Int32Array(blocks);
  }
  for (let i = 0; i < p.length; i++) {
    const at = (i >> 5) * 0x10000 + p.charCodeAt(i);
    pattern[at] = on ? (pattern[at] ?? 0) | (1 << (i & 31)) : 0;
  }
}

/**
 * The Levenshtein distance of the pattern set by `setPattern` (`m` units) and `text` when it is
 * at most `max`, else `max + 1`: Myers' bit-parallel algorithm in blocks of 32 rows, one column
 * of the table per unit of `text` (the block step as in edlib, Šošić and Šikić 2017).
 */
function bitParallelDistance(m: number, text: string, max: number): number {
  const n = text.length;
  if (m === 0) return smaller(n, max + 1);
  const blocks = (m + 31) >> 5;
  plus.fill(-1, 0, blocks);
  minus.fill(0, 0, blocks);
  const lastRow = 1 << ((m - 1) & 31);
  let score = m;
  for (let j = 0; j < n; j++) {
    const unit = text.charCodeAt(j);
    // The horizontal delta entering the block from above: +1 on row 0 (the distance to j units).
    let carry = 1;
    for (let b = 0; b < blocks; b++) {
      const pv = plus[b] ?? 0;
      const mv = minus[b] ?? 0;
      let eq = pattern[b * 0x10000 + unit] ?? 0;
      const xv = eq | mv;
      if (carry < 0) eq |= 1;
      const xh = ((((eq & pv) + pv) | 0) ^ pv) | eq;
      let ph = mv | ~(xh | pv);
      let mh = pv & xh;
      const high = b === blocks - 1 ? lastRow : 1 << 31;
      const out = ph & high ? 1 : mh & high ? -1 : 0;
      ph = (ph << 1) | (carry > 0 ? 1 : 0);
      mh = (mh << 1) | (carry < 0 ? 1 : 0);
      plus[b] = mh | ~(xv | ph);
      minus[b] = ph & xv;
      carry = out;
    }
    score += carry;
    // The distance falls by at most one per unit of text left.
    if (score - (n - j - 1) > max) return max + 1;
  }
  return smaller(score, max + 1);
}

/**
 * The Levenshtein distance of `name` (already set by `setPattern`) and `term` (UTF-16 units) when
 * it is at most `max`, else `max + 1`.
 */
function distanceWithin(name: string, term: string, max: number): number {
  if (max < 0) return 0;
  if (larger(name.length, term.length) - smaller(name.length, term.length) > max) return max + 1;
  return bitParallelDistance(name.length, term, max);
}

export class CloseMatchIndex {
  /** Per term: its feature, as an index into `#features`. */
  readonly #featureOf: Int32Array;
  readonly #features: string[] = [];
  /** Per padded pair: the terms holding it and how many times. */
  readonly #postings = new Map<number, { terms: Int32Array; counts: Int32Array }>();
  /** Per term: its distinct units and how many times each stands in it, from `#unitsFrom[t]`. */
  readonly #units: Uint16Array;
  readonly #unitCounts: Uint16Array;
  readonly #unitsFrom: Int32Array;
  /** Terms of one unit (no inner pair: a name containing one may share no pair with it). */
  readonly #singles: number[] = [];
  readonly #folded: readonly string[];
  readonly #lengths: Int32Array;
  /** The terms sharing a pair with the name being searched (or contained in it), and how many. */
  readonly #reached: Int32Array;
  #reachedCount = 0;
  /** Per term: 1 when it contains the name being searched or the name contains it (zero between). */
  readonly #contained: Uint8Array;
  readonly #longest: number;
  /** Per term: the pairs it shares with the name being searched (zero between searches). */
  readonly #shared: Int32Array;
  /** Per feature: its best score for the name being searched (zero between searches). */
  readonly #best: Float64Array;

  constructor(terms: readonly IndexedTerm[]) {
    this.#folded = terms.map((t) => t.folded);
    this.#lengths = Int32Array.from(terms, (t) => t.folded.length);
    this.#reached = new Int32Array(terms.length);
    this.#shared = new Int32Array(terms.length);
    this.#contained = new Uint8Array(terms.length);
    const featureIds = new Map<string, number>();
    this.#featureOf = Int32Array.from(terms, (t) => {
      let id = featureIds.get(t.feature);
      if (id === undefined) {
        id = this.#features.length;
        featureIds.set(t.feature, id);
        this.#features.push(t.feature);
      }
      return id;
    });
    this.#best = new Float64Array(this.#features.length);
    const lists = new Map<number, { terms: number[]; counts: number[] }>();
    const units: number[] = [];
    const unitCounts: number[] = [];
    this.#unitsFrom = new Int32Array(terms.length + 1);
    terms.forEach((t, i) => {
      if (t.folded.length === 1) this.#singles.push(i);
      for (const [key, count] of pairsOf(t.folded)) {
        let list = lists.get(key);
        if (list === undefined) {
          list = { terms: [], counts: [] };
          lists.set(key, list);
        }
        list.terms.push(i);
        list.counts.push(count);
      }
      const counted = new Map<number, number>();
      for (let k = 0; k < t.folded.length; k++) {
        const unit = t.folded.charCodeAt(k);
        counted.set(unit, (counted.get(unit) ?? 0) + 1);
      }
      for (const [unit, count] of counted) {
        units.push(unit);
        unitCounts.push(count);
      }
      this.#unitsFrom[i + 1] = units.length;
    });
    this.#units = Uint16Array.from(units);
    this.#unitCounts = Uint16Array.from(unitCounts);
    this.#longest = terms.reduce((longest, t) => Math.max(longest, t.folded.length), 0);
    for (const [key, list] of lists)
      this.#postings.set(key, { terms: Int32Array.from(list.terms), counts: Int32Array.from(list.counts) });
  }

  /** The features closest to the folded `query`, best first (see the module's comment). */
  search(query: string, limit: number): ScoredFeature[] {
    if (query === '' || limit <= 0) return [];
    for (let i = 0; i < query.length; i++)
      NAME_UNITS[query.charCodeAt(i)] = (NAME_UNITS[query.charCodeAt(i)] ?? 0) + 1;
    setPattern(query, true);
    const scored: number[] = [];
    try {
      return this.#search(query, limit, scored);
    } finally {
      for (let i = 0; i < query.length; i++) NAME_UNITS[query.charCodeAt(i)] = 0;
      setPattern(query, false);
      for (let i = 0; i < this.#reachedCount; i++) {
        const t = this.#reached[i] ?? 0;
        this.#shared[t] = 0;
        this.#contained[t] = 0;
      }
      this.#reachedCount = 0;
      for (const f of scored) this.#best[f] = 0;
    }
  }

  #search(query: string, limit: number, scored: number[]): ScoredFeature[] {
    const top: ScoredFeature[] = [];
    let needed = MIN_SCORE;
    let measured = 0;
    // The largest distance that reaches `needed`, per length (-2: not yet worked out).
    const maxForNeeded = new Int32Array(Math.max(query.length, this.#longest) + 1).fill(-2);
    // A term sharing k pairs and containing neither way scores at most 1/2 + (k − 1) / (2 × the
    // name's length): those after the first below what is needed cannot change the answer.
    const couldReach = (k: number): boolean => 0.5 + (k - 1) / (2 * query.length) >= needed - 1e-9;
    for (const t of this.#candidates(query)) {
      if (this.#contained[t] === 0 && !couldReach(this.#shared[t] ?? 0)) break;
      const f = this.#featureOf[t] ?? 0;
      const best = this.#best[f] ?? 0;
      const length = this.#lengths[t] ?? 0;
      const longer = larger(query.length, length);
      const gap = longer - smaller(query.length, length);
      const floor = this.#contained[t] === 1 ? CONTAINS : 0;
      let score = floor;
      if (gap === 0 && query === this.#folded[t]) score = 1;
      else if (gap / longer <= 0.5) {
        // The most this term can score, from the pairs and then the units it shares, against
        // what it must reach to change the answer.
        const wanted = larger(floor, best);
        let max: number;
        if (wanted > needed) max = maxDistance(longer, wanted);
        else {
          if (maxForNeeded[longer] === -2) maxForNeeded[longer] = maxDistance(longer, needed);
          max = maxForNeeded[longer] ?? -1;
        }
        const fewest = larger(gap, halfUp(longer + 1 - (this.#shared[t] ?? 0)));
        if (fewest <= max && measured < MAX_MEASURED && longer - this.#sharedUnits(t) <= max) {
          measured++;
          const d = distanceWithin(query, this.#folded[t] ?? '', max);
          if (d <= max) score = larger(similarity(d, longer), floor);
        }
      }
      if (score < needed || score <= best) continue;
      if (best === 0) scored.push(f);
      this.#best[f] = score;
      const feature = this.#features[f] ?? '';
      const at = top.findIndex((s) => s.feature === feature);
      if (at >= 0) top.splice(at, 1);
      top.push({ feature, score });
      top.sort((a, b) => b.score - a.score || a.feature.localeCompare(b.feature));
      if (top.length > limit) top.length = limit;
      if (top.length === limit && (top[limit - 1]?.score ?? MIN_SCORE) > needed) {
        needed = top[limit - 1]?.score ?? MIN_SCORE;
        maxForNeeded.fill(-2);
      }
    }
    return top;
  }

  /** How many units the term shares with the name (set in `NAME_UNITS`). */
  #sharedUnits(t: number): number {
    let shared = 0;
    const to = this.#unitsFrom[t + 1] ?? 0;
    for (let k = this.#unitsFrom[t] ?? 0; k < to; k++)
      shared += smaller(NAME_UNITS[this.#units[k] ?? 0] ?? 0, this.#unitCounts[k] ?? 0);
    return shared;
  }

  /**
   * The terms that may score at least 0.5: those that contain the name or that it contains
   * (marked in `#contained`) first, then those sharing the most pairs with it, in the order they
   * were reached. Leaves the count of shared pairs per term in `#shared`.
   */
  #candidates(query: string): Int32Array {
    const shared = this.#shared;
    const reached = this.#reached;
    let count = 0;
    for (const [key, times] of pairsOf(query)) {
      const list = this.#postings.get(key);
      if (list === undefined) continue;
      for (let k = 0; k < list.terms.length; k++) {
        const t = list.terms[k] ?? 0;
        if (shared[t] === 0) reached[count++] = t;
        shared[t] = (shared[t] ?? 0) + smaller(times, list.counts[k] ?? 0);
      }
    }
    const contains = query.length >= 3;
    if (contains)
      for (const t of this.#singles)
        if (query.includes(this.#folded[t] ?? '\u0000')) {
          if (shared[t] === 0 && this.#contained[t] === 0) reached[count++] = t;
          this.#contained[t] = 1;
        }
    this.#reachedCount = count;
    // A counting sort: the contained first (slot 0), then by shared pairs, most first.
    const most = query.length + 1;
    const slotOf = (t: number): number => (this.#contained[t] === 1 ? 0 : 1 + most - (shared[t] ?? 0));
    const perCount = new Int32Array(most + 2);
    const keep = new Int32Array(count);
    let kept = 0;
    for (let i = 0; i < count; i++) {
      const t = reached[i] ?? 0;
      const k = shared[t] ?? 0;
      const length = this.#lengths[t] ?? 0;
      const longer = larger(query.length, length);
      const gap = longer - smaller(query.length, length);
      // One containing the other shares every inner pair of the shorter one.
      if (
        contains &&
        ((length > query.length && k >= query.length - 1 && (this.#folded[t] ?? '').includes(query)) ||
          (length < query.length && k >= length - 1 && query.includes(this.#folded[t] ?? '\u0000')))
      )
        this.#contained[t] = 1;
      const fewest = larger(gap, halfUp(longer + 1 - k));
      if (this.#contained[t] === 1 || (gap / longer <= 0.5 && similarity(fewest, longer) >= MIN_SCORE)) {
        keep[kept++] = t;
        perCount[slotOf(t)] = (perCount[slotOf(t)] ?? 0) + 1;
      }
    }
    let from = 0;
    for (let c = 0; c < perCount.length; c++) {
      const count = perCount[c] ?? 0;
      perCount[c] = from;
      from += count;
    }
    const ordered = new Int32Array(kept);
    for (let i = 0; i < kept; i++) {
      const t = keep[i] ?? 0;
      const slot = slotOf(t);
      const at = perCount[slot] ?? 0;
      ordered[at] = t;
      perCount[slot] = at + 1;
    }
    return ordered;
  }
}
