import { TopN } from './top-n.js';

/** Reciprocal-rank fusion (Cormack et al. 2009): score = Σ 1 / (k + rank), ranks from 1. */
export const RRF_K = 60;

export interface Fused {
  readonly doc: number;
  readonly score: number;
  readonly lexicalRank: number | null;
  readonly semanticRank: number | null;
}

export function reciprocalRankFusion(
  lexical: readonly number[],
  semantic: readonly number[],
  n: number,
  tie: (a: number, b: number) => number,
  k = RRF_K,
): Fused[] {
  const ranks = new Map<number, { lexical: number | null; semantic: number | null }>();
  lexical.forEach((doc, i) => ranks.set(doc, { lexical: i + 1, semantic: null }));
  semantic.forEach((doc, i) => {
    const r = ranks.get(doc);
    if (r === undefined) ranks.set(doc, { lexical: null, semantic: i + 1 });
    else r.semantic = i + 1;
  });
  const top = new TopN(n, tie);
  const score = (r: { lexical: number | null; semantic: number | null }): number =>
    (r.lexical === null ? 0 : 1 / (k + r.lexical)) + (r.semantic === null ? 0 : 1 / (k + r.semantic));
  for (const [doc, r] of ranks) top.push(doc, score(r));
  return top.result().map(({ id, score: s }) => {
    const r = ranks.get(id);
    return { doc: id, score: s, lexicalRank: r?.lexical ?? null, semanticRank: r?.semantic ?? null };
  });
}
