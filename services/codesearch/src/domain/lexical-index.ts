import type { CodeRecord, CodeType } from '../schemas/code-record.js';
import { CODE_TYPES, normalizeCode } from '../schemas/code-record.js';
import type { AbbreviationTable } from './abbreviations.js';
import { stem, tokenize } from './fold.js';
import { TopN } from './top-n.js';

/**
 * BM25 over every title and synonym of every code, with folded (diacritic-free) stemmed terms in
 * an inverted index of typed arrays. A code scores as its best-matching string, scaled by how much
 * of the query that string covers. Query tokens also match by prefix (the last one as typed, and
 * any unknown word) and through the abbreviation table.
 */

export type StringField = 'title_en' | 'title_vi' | 'synonym';

const FIELD_CODES: readonly StringField[] = ['title_en', 'title_vi', 'synonym'];
const K1 = 1.2;
const B = 0.75;
const PREFIX_WEIGHT = 0.7;
const MAX_PREFIX_TERMS = 48;
const QUERY_STOPWORDS = new Set([
  'of',
  'and',
  'the',
  'with',
  'in',
  'on',
  'to',
  'for',
  'a',
  'an',
  'or',
  'by',
  'at',
  'as',
  'is',
]);

export interface IndexedCode {
  readonly record: CodeRecord;
  /** Where `title_vi` came from: the imported set, or our curated Vietnamese terms. */
  readonly titleViSource: 'import' | 'curated' | null;
  /** Extra synonyms from the curated file (shown and searched like the set's own). */
  readonly synonyms: readonly string[];
}

/** How a query term reached a title: as typed, by prefix, by plural, or via an abbreviation. */
export type MatchVia = 'exact' | 'prefix' | 'abbreviation';

export interface QueryTerm {
  readonly termId: number;
  readonly weight: number;
  /** The query token as the user wrote it. */
  readonly queryToken: string;
  readonly via: MatchVia;
}

export interface QueryGroup {
  /** The query token as written. */
  readonly token: string;
  /** Alternatives of one slot, scored as their best; a group has one or more slots. */
  readonly slots: readonly (readonly QueryTerm[])[];
}

export interface AnalyzedQuery {
  readonly groups: readonly QueryGroup[];
  /** Abbreviations found in the query, with what they were expanded to. */
  readonly expansions: readonly { readonly abbreviation: string; readonly expansions: readonly string[] }[];
  /** Docs whose code is exactly a query token. */
  readonly codeHits: readonly number[];
  /** termId → how it matched (for highlights). */
  readonly terms: ReadonlyMap<number, QueryTerm>;
}

export interface LexicalHit {
  readonly doc: number;
  readonly score: number;
  /** The string that scored best (index into `strings`), or -1 for a code hit. */
  readonly bestString: number;
  /** The share of the query's words that string matched (1 for a code hit). */
  readonly coverage: number;
}

export class LexicalIndex {
  readonly docs: readonly IndexedCode[];
  /** [start, end) of each type's docs (docs are grouped by type). */
  readonly typeRanges: ReadonlyMap<CodeType, readonly [number, number]>;
  private readonly docType: Uint8Array;
  private readonly docByCode = new Map<string, number[]>();
  /** Per string: its doc, field, synonym index, length in terms. */
  readonly stringDoc: Int32Array;
  readonly stringField: Uint8Array;
  readonly stringSyn: Int32Array;
  private readonly stringLen: Float32Array;
  private readonly avgLen: number;
  private readonly vocab = new Map<string, number>();
  private readonly sortedTerms: string[];
  private readonly postStart: Int32Array;
  private readonly postString: Int32Array;
  private readonly postTf: Float32Array;
  private readonly idf: Float32Array;
  // Scratch space for one query at a time (search is synchronous).
  private readonly acc: Float32Array;
  private readonly slotAcc: Float32Array;
  private readonly groupMask: Uint32Array;

  constructor(codes: readonly IndexedCode[]) {
    const order = CODE_TYPES.map((t) => codes.filter((c) => c.record.type === t));
    this.docs = order.flat();
    const ranges = new Map<CodeType, readonly [number, number]>();
    let at = 0;
    CODE_TYPES.forEach((t, i) => {
      const n = order[i]?.length ?? 0;
      if (n > 0) ranges.set(t, [at, at + n]);
      at += n;
    });
    this.typeRanges = ranges;
    this.docType = new Uint8Array(this.docs.length);
    const stringDoc: number[] = [];
    const stringField: number[] = [];
    const stringSyn: number[] = [];
    const stringTerms: number[][] = [];
    const termOf = (term: string): number => {
      let id = this.vocab.get(term);
      if (id === undefined) {
        id = this.vocab.size;
        this.vocab.set(term, id);
      }
      return id;
    };
    this.docs.forEach((doc, d) => {
      this.docType[d] = CODE_TYPES.indexOf(doc.record.type);
      const key = normalizeCode(doc.record.code);
      this.docByCode.set(key, [...(this.docByCode.get(key) ?? []), d]);
      const add = (text: string | null, field: StringField, syn: number): void => {
        if (text === null) return;
        const terms = tokenize(text).map((t) => termOf(stem(t.term)));
        if (terms.length === 0) return;
        stringDoc.push(d);
        stringField.push(FIELD_CODES.indexOf(field));
        stringSyn.push(syn);
        stringTerms.push(terms);
      };
      add(doc.record.title_en, 'title_en', -1);
      add(doc.record.title_vi, 'title_vi', -1);
      doc.synonyms.forEach((s, i) => {
        add(s, 'synonym', i);
      });
    });
    const nStrings = stringDoc.length;
    this.stringDoc = Int32Array.from(stringDoc);
    this.stringField = Uint8Array.from(stringField);
    this.stringSyn = Int32Array.from(stringSyn);
    this.stringLen = new Float32Array(nStrings);
    const nTerms = this.vocab.size;
    const df = new Int32Array(nTerms);
    let total = 0;
    let postings = 0;
    stringTerms.forEach((terms, s) => {
      this.stringLen[s] = terms.length;
      total += terms.length;
      const unique = new Set(terms);
      postings += unique.size;
      for (const t of unique) df[t] = (df[t] ?? 0) + 1;
    });
    this.avgLen = nStrings === 0 ? 1 : total / nStrings;
    this.postStart = new Int32Array(nTerms + 1);
    for (let t = 0; t < nTerms; t++) this.postStart[t + 1] = (this.postStart[t] ?? 0) + (df[t] ?? 0);
    this.postString = new Int32Array(postings);
    this.postTf = new Float32Array(postings);
    const fill = this.postStart.slice(0, nTerms);
    stringTerms.forEach((terms, s) => {
      const tf = new Map<number, number>();
      for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const [t, n] of tf) {
        const p = fill[t] ?? 0;
        this.postString[p] = s;
        this.postTf[p] = n;
        fill[t] = p + 1;
      }
    });
    this.idf = new Float32Array(nTerms);
    for (let t = 0; t < nTerms; t++) {
      const n = df[t] ?? 0;
      this.idf[t] = Math.log(1 + (nStrings - n + 0.5) / (n + 0.5));
    }
    this.sortedTerms = [...this.vocab.keys()].sort();
    this.acc = new Float32Array(nStrings);
    this.slotAcc = new Float32Array(nStrings);
    this.groupMask = new Uint32Array(nStrings);
  }

  get size(): number {
    return this.docs.length;
  }

  get vocabularySize(): number {
    return this.vocab.size;
  }

  termId(term: string): number | undefined {
    return this.vocab.get(term);
  }

  /** Docs holding `code` (any type; dots and case ignored). */
  lookup(code: string): readonly number[] {
    return this.docByCode.get(normalizeCode(code)) ?? [];
  }

  /** The text of string `s`. */
  stringText(s: number): { field: StringField; text: string } {
    const doc = this.docs[this.stringDoc[s] ?? 0];
    const field = FIELD_CODES[this.stringField[s] ?? 0] ?? 'title_en';
    if (doc === undefined) return { field, text: '' };
    if (field === 'title_en') return { field, text: doc.record.title_en ?? '' };
    if (field === 'title_vi') return { field, text: doc.record.title_vi ?? '' };
    return { field, text: doc.synonyms[this.stringSyn[s] ?? 0] ?? '' };
  }

  private prefixTerms(prefix: string): number[] {
    let lo = 0;
    let hi = this.sortedTerms.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.sortedTerms[mid] ?? '') < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: number[] = [];
    for (let i = lo; i < this.sortedTerms.length && out.length < MAX_PREFIX_TERMS; i++) {
      const term = this.sortedTerms[i] ?? '';
      if (!term.startsWith(prefix)) break;
      if (term !== prefix) out.push(this.vocab.get(term) ?? 0);
    }
    return out;
  }

  /** Splits the query into groups of term alternatives (see the class comment). */
  analyze(query: string, abbreviations: AbbreviationTable): AnalyzedQuery {
    const raw = tokenize(query).map((t) => ({ ...t, original: query.slice(t.start, t.end) }));
    const content = raw.filter((t) => !QUERY_STOPWORDS.has(t.term));
    const tokens = (content.length > 0 ? content : raw).slice(0, 31);
    const terms = new Map<number, QueryTerm>();
    const note = (q: QueryTerm): QueryTerm => {
      const known = terms.get(q.termId);
      if (known === undefined || known.weight < q.weight) terms.set(q.termId, q);
      return q;
    };
    const groups: QueryGroup[] = [];
    const expansions: { abbreviation: string; expansions: string[] }[] = [];
    const codeHits = new Set<number>();
    // Codes as written (`E11.9`, `0DTJ4ZZ`), whole or among the words.
    for (const piece of [query.trim(), ...query.split(/[\s,;()]+/)]) {
      // A trailing run is tried from its first character only (from each, a long run is read again).
      const code = piece.replace(/^[^A-Za-z0-9]+|(?<![^A-Za-z0-9])[^A-Za-z0-9]+$/g, '');
      if (code.length >= 2 && code.length <= 32) for (const d of this.lookup(code)) codeHits.add(d);
    }
    tokens.forEach((token, i) => {
      const term = stem(token.term);
      const id = this.vocab.get(term);
      const slot: QueryTerm[] = [];
      if (id !== undefined)
        slot.push(note({ termId: id, weight: 1, queryToken: token.original, via: 'exact' }));
      // Written in capitals (THA, HTN), or an unknown word (đtđ, copd): an abbreviation, if listed.
      const upper = /^[A-ZĐ0-9]{2,}$/u.test(token.original) && /[A-ZĐ]/u.test(token.original);
      const abbreviation =
        upper || (id === undefined && token.term.length >= 3) ? abbreviations.lookup(token.term) : undefined;
      const last = i === tokens.length - 1;
      const prefixable = abbreviation === undefined && token.term.length >= 3 && !/^\d+$/.test(token.term);
      if (prefixable && (last || id === undefined)) {
        for (const p of this.prefixTerms(token.term))
          slot.push(note({ termId: p, weight: PREFIX_WEIGHT, queryToken: token.original, via: 'prefix' }));
      }
      const slots: QueryTerm[][] = slot.length > 0 ? [slot] : [];
      if (abbreviation !== undefined) {
        expansions.push({
          abbreviation: token.original,
          expansions: abbreviation.expansions.map((e) => e.text),
        });
        for (const expansion of abbreviation.expansions) {
          for (const part of tokenize(expansion.text)) {
            if (QUERY_STOPWORDS.has(part.term)) continue;
            const pid = this.vocab.get(stem(part.term));
            if (pid === undefined) continue;
            slots.push([note({ termId: pid, weight: 1, queryToken: token.original, via: 'abbreviation' })]);
          }
        }
      }
      groups.push({ token: token.original, slots });
    });
    return { groups, expansions, codeHits: [...codeHits], terms };
  }

  /**
   * The best `n` docs of the allowed types for an analyzed query: BM25 of each string, scaled by
   * the share of query groups it covers; a doc scores as its best string; exact code hits first.
   */
  search(query: AnalyzedQuery, types: ReadonlySet<CodeType>, n: number): LexicalHit[] {
    const allowed = new Uint8Array(CODE_TYPES.length);
    CODE_TYPES.forEach((t, i) => {
      allowed[i] = types.has(t) ? 1 : 0;
    });
    const { acc, slotAcc, groupMask } = this;
    const touched: number[] = [];
    const slotTouched: number[] = [];
    const groups = query.groups.filter((g) => g.slots.length > 0);
    groups.forEach((group, g) => {
      const bit = 1 << g;
      for (const slot of group.slots) {
        for (const q of slot) {
          const idf = this.idf[q.termId] ?? 0;
          const end = this.postStart[q.termId + 1] ?? 0;
          for (let p = this.postStart[q.termId] ?? 0; p < end; p++) {
            const s = this.postString[p] ?? 0;
            if (allowed[this.docType[this.stringDoc[s] ?? 0] ?? 0] === 0) continue;
            const tf = this.postTf[p] ?? 0;
            const len = this.stringLen[s] ?? 1;
            const c = (q.weight * idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * len) / this.avgLen));
            const prev = slotAcc[s] ?? 0;
            if (prev === 0) slotTouched.push(s);
            if (c > prev) slotAcc[s] = c;
          }
        }
        for (const s of slotTouched) {
          if (acc[s] === 0) touched.push(s);
          acc[s] = (acc[s] ?? 0) + (slotAcc[s] ?? 0);
          groupMask[s] = (groupMask[s] ?? 0) | bit;
          slotAcc[s] = 0;
        }
        slotTouched.length = 0;
      }
    });
    const nGroups = Math.max(1, groups.length);
    const nWords = Math.max(1, query.groups.length);
    const bestByDoc = new Map<number, { score: number; s: number; words: number }>();
    for (const s of touched) {
      const matched = popcount(groupMask[s] ?? 0);
      const coverage = matched / nGroups;
      const score = (acc[s] ?? 0) * (0.25 + 0.75 * coverage * coverage);
      acc[s] = 0;
      groupMask[s] = 0;
      const d = this.stringDoc[s] ?? 0;
      const best = bestByDoc.get(d);
      if (best === undefined || score > best.score || (score === best.score && s < best.s))
        bestByDoc.set(d, { score, s, words: matched / nWords });
    }
    const top = new TopN(n, (a, b) => this.tieBreak(a, b));
    let max = 0;
    for (const [d, { score }] of bestByDoc) {
      top.push(d, score);
      if (score > max) max = score;
    }
    const hits: LexicalHit[] = [];
    const seen = new Set<number>();
    for (const d of query.codeHits) {
      if (allowed[this.docType[d] ?? 0] === 0) continue;
      hits.push({ doc: d, score: max + 10, bestString: -1, coverage: 1 });
      seen.add(d);
    }
    for (const { id, score } of top.result()) {
      if (seen.has(id) || hits.length >= n) continue;
      const best = bestByDoc.get(id);
      hits.push({ doc: id, score, bestString: best?.s ?? -1, coverage: best?.words ?? 0 });
    }
    return hits.slice(0, n);
  }

  /** Shorter (more general) codes first at equal scores, then code order: deterministic. */
  tieBreak(a: number, b: number): number {
    const ca = this.docs[a]?.record.code ?? '';
    const cb = this.docs[b]?.record.code ?? '';
    return ca.length !== cb.length ? ca.length - cb.length : ca < cb ? -1 : ca > cb ? 1 : a - b;
  }

  /** Spans of `text` whose terms the query matched. */
  highlight(
    text: string,
    query: AnalyzedQuery,
  ): { start: number; end: number; text: string; query_term: string; via: MatchVia }[] {
    const spans: { start: number; end: number; text: string; query_term: string; via: MatchVia }[] = [];
    for (const token of tokenize(text)) {
      const id = this.vocab.get(stem(token.term));
      const q = id === undefined ? undefined : query.terms.get(id);
      if (q === undefined) continue;
      spans.push({
        start: token.start,
        end: token.end,
        text: text.slice(token.start, token.end),
        query_term: q.queryToken,
        via: q.via,
      });
    }
    return spans;
  }
}

function popcount(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
