import type { SearchResult } from '../schemas/api.js';
import type { CodeType } from '../schemas/code-record.js';
import { normalizeCode } from '../schemas/code-record.js';
import type { Fused } from './fusion.js';
import type { AnalyzedQuery, LexicalIndex } from './lexical-index.js';

/** Serializes ranked docs: titles, parent, and which query words matched which spans. */

export function titleOf(r: { title_en: string | null; title_vi: string | null; code: string }): string {
  return r.title_en ?? r.title_vi ?? r.code;
}

export function parentOf(index: LexicalIndex, doc: number): { code: string; title: string } | null {
  const r = index.docs[doc]?.record;
  if (r?.parent == null) return null;
  const p = index.lookup(r.parent).find((d) => index.docs[d]?.record.type === r.type);
  const pr = p === undefined ? undefined : index.docs[p]?.record;
  return { code: r.parent, title: pr === undefined ? '' : titleOf(pr) };
}

export function buildResults(
  index: LexicalIndex,
  query: AnalyzedQuery,
  ranked: readonly Fused[],
  lexicalBest: ReadonlyMap<number, number>,
  similarity: ReadonlyMap<number, number>,
): SearchResult[] {
  const codeHits = new Set(query.codeHits);
  return ranked.map((f) => {
    const doc = index.docs[f.doc];
    if (doc === undefined) throw new Error(`no doc ${f.doc}`);
    const r = doc.record;
    const highlights: SearchResult['highlights'] = [];
    if (codeHits.has(f.doc))
      highlights.push({
        field: 'code',
        text: r.code,
        spans: [{ start: 0, end: r.code.length, text: r.code, query_term: r.code, via: 'code' }],
      });
    for (const field of ['title_en', 'title_vi'] as const) {
      const text = r[field];
      if (text === null) continue;
      const spans = index.highlight(text, query);
      if (spans.length > 0) highlights.push({ field, text, spans });
    }
    const best = lexicalBest.get(f.doc);
    if (best !== undefined && best >= 0) {
      const s = index.stringText(best);
      if (s.field === 'synonym') {
        const spans = index.highlight(s.text, query);
        if (spans.length > 0) highlights.push({ field: 'synonym', text: s.text, spans });
      }
    }
    return {
      code: r.code,
      type: r.type,
      title: titleOf(r),
      title_vi: r.title_vi,
      title_en: r.title_en,
      title_vi_source: doc.titleViSource,
      score: Math.round(f.score * 1e6) / 1e6,
      ranks: { lexical: f.lexicalRank, semantic: f.semanticRank },
      similarity: similarity.has(f.doc) ? Math.round((similarity.get(f.doc) ?? 0) * 1e4) / 1e4 : null,
      parent: parentOf(index, f.doc),
      highlights,
    };
  });
}

/** One code with its place in the hierarchy. */
export function codeDetail(index: LexicalIndex, type: CodeType, code: string) {
  const doc = index.lookup(code).find((d) => index.docs[d]?.record.type === type);
  if (doc === undefined) return null;
  const entry = index.docs[doc];
  if (entry === undefined) return null;
  const r = entry.record;
  const ancestors: { code: string; title: string }[] = [];
  let at: number | undefined = doc;
  const seen = new Set<number>([doc]);
  while (at !== undefined) {
    const p = parentOf(index, at);
    if (p === null) break;
    ancestors.unshift(p);
    at = index.lookup(p.code).find((d) => index.docs[d]?.record.type === type);
    if (at !== undefined && seen.has(at)) break;
    if (at !== undefined) seen.add(at);
  }
  const [start, end] = index.typeRanges.get(type) ?? [0, 0];
  const key = normalizeCode(r.code);
  const children: { code: string; title: string }[] = [];
  let childrenCount = 0;
  for (let d = start; d < end; d++) {
    const c = index.docs[d]?.record;
    if (c?.parent != null && normalizeCode(c.parent) === key) {
      childrenCount++;
      if (children.length < 200) children.push({ code: c.code, title: titleOf(c) });
    }
  }
  return {
    code: r.code,
    type: r.type,
    title: titleOf(r),
    title_vi: r.title_vi,
    title_en: r.title_en,
    title_vi_source: entry.titleViSource,
    synonyms: [...entry.synonyms],
    parent: parentOf(index, doc),
    ancestors,
    children,
    children_count: childrenCount,
  };
}
