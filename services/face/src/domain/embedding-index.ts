/**
 * Every registered embedding in one contiguous Float32Array (rows of `dim`): the best match of a
 * query face is the row with the highest dot product (cosine: rows and queries are unit vectors).
 *
 * Small registries are scanned exactly in JavaScript. Large ones (from `coarseFrom` rows) are
 * searched in two steps: a coarse scan of a uint8 copy of the rows (x * 127 + 128) against the
 * int8 query (x * 127), run by an injected scorer (onnxruntime's int8 matrix kernels: 51 MB read
 * at 100k x 512 instead of 205 MB), then the `rerank` best rows by coarse score are scored exactly
 * in float32. The +128 offset adds the same amount to every row's score, so it does not change the
 * ranking. Rows of a deleted person are swapped out (the order of rows carries no meaning).
 */

/** Coarse scores: for each row, for each query, sum(rows[r] * queries[:, q]) as int32 [rows, k]. */
export type CoarseScorer = (
  rows: Uint8Array,
  count: number,
  queries: Int8Array,
  k: number,
) => Promise<Int32Array>;

export interface SearchOptions {
  readonly scorer?: CoarseScorer | undefined;
  /** Registries this large or larger use the coarse scan (default 4096 rows). */
  readonly coarseFrom?: number;
  /** Rows re-scored exactly per query after the coarse scan (default 32). */
  readonly rerank?: number;
}

const quantize = (x: number): number => Math.max(-127, Math.min(127, Math.round(x * 127)));

export interface Match {
  readonly personId: number;
  /** Cosine similarity of the best row. */
  readonly cosine: number;
}

export class EmbeddingIndex {
  private data: Float32Array;
  private coarse: Uint8Array;
  private owners: Int32Array;
  private count = 0;

  constructor(
    readonly dim: number,
    capacity = 1024,
  ) {
    this.data = new Float32Array(capacity * dim);
    this.coarse = new Uint8Array(capacity * dim);
    this.owners = new Int32Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  add(personId: number, embedding: Float32Array): void {
    if (embedding.length !== this.dim) {
      throw new Error(`embedding has ${String(embedding.length)} dimensions, the index ${String(this.dim)}`);
    }
    if (this.count === this.owners.length) this.grow();
    this.data.set(embedding, this.count * this.dim);
    const base = this.count * this.dim;
    for (let i = 0; i < this.dim; i++) this.coarse[base + i] = quantize(embedding[i] as number) + 128;
    this.owners[this.count] = personId;
    this.count++;
  }

  /** Removes every row of `personId`; returns how many. */
  remove(personId: number): number {
    let removed = 0;
    for (let row = 0; row < this.count;) {
      if (this.owners[row] === personId) {
        const last = this.count - 1;
        if (row !== last) {
          this.data.copyWithin(row * this.dim, last * this.dim, (last + 1) * this.dim);
          this.coarse.copyWithin(row * this.dim, last * this.dim, (last + 1) * this.dim);
          this.owners[row] = this.owners[last] as number;
        }
        this.count--;
        removed++;
      } else row++;
    }
    return removed;
  }

  /** The best row for each query: exact scan, or coarse scan and exact rerank for large registries. */
  async find(queries: readonly Float32Array[], options: SearchOptions = {}): Promise<(Match | undefined)[]> {
    const { scorer } = options;
    if (scorer === undefined || this.count < (options.coarseFrom ?? 4096) || queries.length === 0) {
      return this.search(queries);
    }
    const k = queries.length;
    const q = new Int8Array(this.dim * k);
    queries.forEach((query, j) => {
      for (let i = 0; i < this.dim; i++) q[i * k + j] = quantize(query[i] as number);
    });
    const scores = await scorer(this.coarse.subarray(0, this.count * this.dim), this.count, q, k);
    const rerank = Math.min(this.count, options.rerank ?? 32);
    return queries.map((query, j) => {
      const top = topRows(scores, this.count, k, j, rerank);
      let best: Match | undefined;
      for (const row of top) {
        let sum = 0;
        const base = row * this.dim;
        for (let i = 0; i < this.dim; i++) sum += (query[i] as number) * (this.data[base + i] as number);
        if (best === undefined || sum > best.cosine)
          best = { personId: this.owners[row] as number, cosine: sum };
      }
      return best;
    });
  }

  /** The best row for each query by an exact scan (undefined when the index is empty). */
  search(queries: readonly Float32Array[]): (Match | undefined)[] {
    const q = queries.length;
    const best = new Float64Array(q).fill(-Infinity);
    const bestRow = new Int32Array(q).fill(-1);
    const dim = this.dim;
    const data = this.data;
    for (let row = 0; row < this.count; row++) {
      const base = row * dim;
      for (let j = 0; j < q; j++) {
        const query = queries[j] as Float32Array;
        let sum = 0;
        for (let i = 0; i < dim; i++) sum += (query[i] as number) * (data[base + i] as number);
        if (sum > (best[j] as number)) {
          best[j] = sum;
          bestRow[j] = row;
        }
      }
    }
    return queries.map((_, j) => {
      const row = bestRow[j] as number;
      return row < 0 ? undefined : { personId: this.owners[row] as number, cosine: best[j] as number };
    });
  }

  private grow(): void {
    const capacity = this.owners.length * 2;
    const data = new Float32Array(capacity * this.dim);
    data.set(this.data.subarray(0, this.count * this.dim));
    const owners = new Int32Array(capacity);
    owners.set(this.owners.subarray(0, this.count));
    const coarse = new Uint8Array(capacity * this.dim);
    coarse.set(this.coarse.subarray(0, this.count * this.dim));
    this.coarse = coarse;
    this.data = data;
    this.owners = owners;
  }
}

/** The `n` rows with the highest score in column `j` of an int32 [count, k] matrix. */
function topRows(scores: Int32Array, count: number, k: number, j: number, n: number): number[] {
  const rows: number[] = [];
  const vals: number[] = [];
  let min = -Infinity;
  for (let r = 0; r < count; r++) {
    const v = scores[r * k + j] as number;
    if (rows.length < n) {
      rows.push(r);
      vals.push(v);
      if (rows.length === n) min = Math.min(...vals);
    } else if (v > min) {
      const at = vals.indexOf(min);
      rows[at] = r;
      vals[at] = v;
      min = Math.min(...vals);
    }
  }
  return rows;
}
