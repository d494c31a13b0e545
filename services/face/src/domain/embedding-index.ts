/**
 * Every registered embedding in one contiguous Float32Array (rows of `dim`), searched by a linear
 * scan: the best match of each query face is the row with the highest dot product (cosine, rows
 * and queries being unit vectors). A scan of 100k x 512 is ~51M multiply-adds, a few tens of ms in
 * V8 on one core, measured by `npm run bench:face`; several faces of one image share one pass over
 * the rows. Rows of a deleted person are swapped out (the order of rows carries no meaning).
 */

export interface Match {
  readonly personId: number;
  /** Cosine similarity of the best row. */
  readonly cosine: number;
}

export class EmbeddingIndex {
  private data: Float32Array;
  private owners: Int32Array;
  private count = 0;

  constructor(
    readonly dim: number,
    capacity = 1024,
  ) {
    this.data = new Float32Array(capacity * dim);
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
          this.owners[row] = this.owners[last] as number;
        }
        this.count--;
        removed++;
      } else row++;
    }
    return removed;
  }

  /** The best row for each query (undefined when the index is empty). */
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
    this.data = data;
    this.owners = owners;
  }
}
