/** @jest-environment ./test/face/ort-environment.cjs */
import { describe, expect, it } from '@jest/globals';
import { loadCoarseScorer } from '../../services/face/src/adapters/ort-scorer.js';
import { EmbeddingIndex } from '../../services/face/src/domain/embedding-index.js';
import { l2Normalize } from '../../services/face/src/domain/similarity.js';

// The large-registry path: an int8 coarse scan on onnxruntime (a MatMulInteger graph encoded by
// hand) and an exact float32 rerank must find what the exact scan finds.

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

describe('coarse scan + rerank', () => {
  it('finds the same best person and cosine as the exact scan, for several queries at once', async () => {
    const dim = 512;
    const rand = seeded(7);
    const vector = () => l2Normalize(Float32Array.from({ length: dim }, rand));
    const index = new EmbeddingIndex(dim);
    const rows: Float32Array[] = [];
    for (let i = 0; i < 6000; i++) {
      const v = vector();
      rows.push(v);
      index.add(i + 1, v);
    }
    // Queries: noisy copies of registered rows (a person seen again), and strangers.
    const noisy = (v: Float32Array) => l2Normalize(v.map((x) => x + rand() * 0.08));
    const queries = [noisy(rows[17]!), noisy(rows[4321]!), vector(), noisy(rows[5999]!), vector()];
    const { scorer, dispose } = await loadCoarseScorer(dim, 1);
    try {
      const exact = index.search(queries);
      const fast = await index.find(queries, { scorer, coarseFrom: 1000 });
      expect(fast.map((m) => m?.personId)).toEqual(exact.map((m) => m?.personId));
      fast.forEach((m, i) => expect(m!.cosine).toBeCloseTo(exact[i]!.cosine, 5));
      expect(fast.map((m) => m?.personId).slice(0, 2)).toEqual([18, 4322]);
      // After removing a person, their rows are gone from both copies.
      index.remove(18);
      const after = await index.find([queries[0]!], { scorer, coarseFrom: 1000 });
      expect(after[0]!.personId).not.toBe(18);
      expect(after[0]!.personId).toBe(index.search([queries[0]!])[0]!.personId);
    } finally {
      await dispose();
    }
  });
});
