/**
 * How a face embedding is compared with the registry. Embeddings are L2-normalised, so cosine
 * similarity is their dot product (-1..1). The service reports, for a match:
 *
 * - `confidence` = cosine similarity clamped to 0..1. Recognition models of the ArcFace family put
 *   two photos of one person at 0.4-0.8 and different people below ~0.3, so the spec's default
 *   `confidence_threshold` of 0.4 is a sensible operating point for them.
 * - `distance` = 1 - cosine similarity (0..2): 0 for identical embeddings.
 *
 * A face is `recognized` when its best match's confidence is at least the threshold.
 */

export function l2Normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  const out = new Float32Array(vector.length);
  if (norm === 0 || !Number.isFinite(norm)) return out;
  for (let i = 0; i < vector.length; i++) out[i] = (vector[i] as number) / norm;
  return out;
}

export function dot(a: Float32Array, b: Float32Array, bOffset = 0): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[bOffset + i] as number);
  return sum;
}

export function confidenceOf(cosine: number): number {
  return Math.min(1, Math.max(0, cosine));
}

export function distanceOf(cosine: number): number {
  return 1 - cosine;
}

/** The mean of several L2-normalised embeddings, normalised again (one template per person). */
export function meanEmbedding(embeddings: readonly Float32Array[]): Float32Array {
  const first = embeddings[0];
  if (first === undefined) throw new Error('meanEmbedding needs at least one embedding');
  const sum = new Float32Array(first.length);
  for (const e of embeddings) {
    if (e.length !== first.length) throw new Error('embeddings of different dimensions');
    for (let i = 0; i < e.length; i++) sum[i] = (sum[i] as number) + (e[i] as number);
  }
  return l2Normalize(sum);
}

/** Rounds for responses: confidences and distances to 4 decimals. */
export function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
