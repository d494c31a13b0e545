import { performance } from 'node:perf_hooks';
import { defineRoute, jsonBody, type AnyRoute } from '@clinicalsuite/kit';
import { reciprocalRankFusion, type Fused } from '../domain/fusion.js';
import { buildResults } from '../domain/results.js';
import { SearchResponseSchema, searchRequestSchema, type SearchResponse } from '../schemas/api.js';
import { CODE_TYPES, type CodeType } from '../schemas/code-record.js';
import { TopN } from '../domain/top-n.js';
import { describeVectorState, requireSnapshot, unavailableHint, type CodesearchRuntime } from './runtime.js';

/** Lexical hits that hybrid search always keeps in its answer. */
const KEEP_LEXICAL = 3;

export function searchRoute(rt: CodesearchRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/search',
    summary: 'Search medical codes by text (hybrid: BM25 fused with embeddings; lexical without a model)',
    description:
      'Lexical: BM25 over titles and synonyms with diacritics folded (đ → d) and medical abbreviations ' +
      '(THA, ĐTĐ, NMCT, HTN, COPD…) expanded. Hybrid: the lexical ranking fused with the cosine ranking ' +
      'of the query and title embeddings by reciprocal-rank fusion (k = 60). `mode` says which ran and ' +
      '`mode_reason` why not hybrid; `missing_types` lists requested types with no codes loaded. A title ' +
      'less similar to the query than CODESEARCH_MIN_SIMILARITY (CODESEARCH_MIN_SIMILARITY_UNMATCHED when ' +
      'no title shares a word with the query) is not a semantic match.',
    tags: ['search'],
    body: searchRequestSchema({
      maxQueryChars: rt.config.CODESEARCH_MAX_QUERY_CHARS,
      maxTopK: rt.config.CODESEARCH_MAX_TOP_K,
    }),
    bodyParser: jsonBody({
      limit: rt.config.BODY_LIMIT,
      message: 'Send the search as JSON (Content-Type: application/json)',
    }),
    response: SearchResponseSchema,
    responses: {
      400: { description: 'Malformed JSON' },
      413: { description: 'Body larger than BODY_LIMIT' },
      415: { description: 'Not JSON' },
      422: { description: 'Invalid fields (listed)' },
      503: { description: 'Code sets still loading' },
    },
    handler: async ({ body, signal }): Promise<SearchResponse> => {
      const started = performance.now();
      const snap = requireSnapshot(rt);
      const { index } = snap;
      const requested: CodeType[] =
        body.code_types === null ? [...CODE_TYPES] : [...new Set(body.code_types)];
      const present = requested.filter((t) => index.typeRanges.has(t));
      const missing = requested.filter((t) => !index.typeRanges.has(t));
      const candidates = Math.max(rt.config.CODESEARCH_CANDIDATES, body.top_k);
      const tie = (a: number, b: number): number => index.tieBreak(a, b);

      const t0 = performance.now();
      const analyzed = index.analyze(body.query, rt.abbreviations);
      const lexical = index.search(analyzed, new Set(present), candidates);
      rt.metrics.stage.observe({ stage: 'lexical' }, (performance.now() - t0) / 1000);
      const lexicalBest = new Map(lexical.map((h) => [h.doc, h.bestString]));

      let mode: 'hybrid' | 'lexical' = 'lexical';
      let reason: string | null = null;
      let ranked: Fused[];
      const similarity = new Map<number, number>();
      const embedder = rt.catalog.model;
      const ready = present.filter((t) => snap.vectors.get(t)?.state === 'ready');
      if (!body.hybrid) reason = 'hybrid: false was requested';
      else if (present.length === 0) reason = 'no codes of the requested types are loaded';
      else if (embedder === undefined) reason = `no embedding model loaded: ${rt.catalog.modelReason}`;
      else if (ready.length === 0)
        reason = `title vectors not ready: ${present.map((t) => describeVectorState(t, snap.vectors.get(t))).join('; ')}`;
      if (reason === null && embedder !== undefined) {
        mode = 'hybrid';
        const notReady = present.filter((t) => !ready.includes(t));
        if (notReady.length > 0)
          reason = `lexical only for ${notReady.map((t) => describeVectorState(t, snap.vectors.get(t))).join('; ')}`;
        const t1 = performance.now();
        const [vector] = await embedder.embed([body.query], 'query');
        signal.throwIfAborted();
        const t2 = performance.now();
        rt.metrics.stage.observe({ stage: 'embed' }, (t2 - t1) / 1000);
        const top = new TopN(candidates, tie);
        for (const type of ready) {
          const state = snap.vectors.get(type);
          const range = index.typeRanges.get(type);
          if (state?.state !== 'ready' || range === undefined || vector === undefined) continue;
          const scores = await embedder.scan(state.vectors, vector);
          for (let i = 0; i < scores.length; i++) top.push(range[0] + i, scores[i] ?? 0);
        }
        const nearest = top.result();
        for (const h of nearest) similarity.set(h.id, h.score);
        // A title less similar than the minimum is no match: the nearest titles of a query that
        // means nothing (an emoji, "qwerty") are still some titles, and a made-up code is worse
        // than none. Its similarity is still reported when lexical search found it.
        // A query no title shares a word with must clear the higher floor: its nearest titles are
        // all the embeddings have, and a model whose cosines run high (E5) puts nonsense near some.
        const floor =
          lexical.length === 0
            ? Math.max(rt.config.CODESEARCH_MIN_SIMILARITY, rt.config.CODESEARCH_MIN_SIMILARITY_UNMATCHED)
            : rt.config.CODESEARCH_MIN_SIMILARITY;
        const semantic = nearest.filter((h) => h.score >= floor);
        const t3 = performance.now();
        rt.metrics.stage.observe({ stage: 'semantic' }, (t3 - t2) / 1000);
        // Exact code hits stay on top whatever the embeddings say.
        const codeHits = lexical.filter((h) => h.bestString === -1).map((h) => h.doc);
        const fused = reciprocalRankFusion(
          lexical.map((h) => h.doc),
          semantic.map((h) => h.id),
          candidates,
          tie,
        );
        const pinned = fused.filter((f) => codeHits.includes(f.doc));
        ranked = [...pinned, ...fused.filter((f) => !codeHits.includes(f.doc))].slice(0, body.top_k);
        // The best lexical matches are never fused away: a lexical #1 the embeddings do not rank
        // (ICD-10-CM "Calculus of kidney" for "kidney stones") keeps its place in the answer, and
        // so does every lexical hit of the answer's length whose title matched all the query's
        // words (a curated Vietnamese term the embeddings do not place).
        const keep = Math.min(KEEP_LEXICAL, body.top_k);
        const keptHits = lexical
          .slice(0, body.top_k)
          .filter((h, i) => i < keep || h.coverage >= 1)
          .slice(0, body.top_k);
        for (const hit of keptHits) {
          if (ranked.some((f) => f.doc === hit.doc)) continue;
          const f = fused.find((x) => x.doc === hit.doc);
          if (f === undefined) continue;
          // Replace the lowest fused result that is not itself one of the kept lexical hits.
          const kept = new Set(keptHits.map((h) => h.doc));
          for (let i = ranked.length - 1; i >= 0; i--) {
            if (!kept.has(ranked[i]?.doc ?? -1)) {
              ranked.splice(i, 1);
              break;
            }
          }
          ranked.push(f);
        }
        ranked.sort((a, b) => b.score - a.score || tie(a.doc, b.doc));
        ranked = [
          ...ranked.filter((f) => codeHits.includes(f.doc)),
          ...ranked.filter((f) => !codeHits.includes(f.doc)),
        ];
        rt.metrics.stage.observe({ stage: 'fuse' }, (performance.now() - t3) / 1000);
      } else {
        ranked = lexical.slice(0, body.top_k).map((h, i) => ({
          doc: h.doc,
          score: h.score,
          lexicalRank: i + 1,
          semanticRank: null,
        }));
      }
      rt.metrics.searches.inc({ mode });
      return {
        query: body.query,
        mode,
        mode_reason: reason,
        code_types: present,
        missing_types: missing,
        // A type asked for by name and absent says how to load it; a damaged one always says so.
        warnings: missing.flatMap((t) =>
          body.code_types !== null || snap.damaged.has(t) ? [unavailableHint(snap, t)] : [],
        ),
        expansions: analyzed.expansions.map((e) => ({
          abbreviation: e.abbreviation,
          expansions: [...e.expansions],
        })),
        results: buildResults(index, analyzed, ranked, lexicalBest, similarity),
        took_ms: Math.round((performance.now() - started) * 1000) / 1000,
      };
    },
  });
}
