/** The best `n` ids by score (descending; ties by the `tie` order), from a stream of candidates. */
export class TopN {
  private readonly ids: number[] = [];
  private readonly scores: number[] = [];

  constructor(
    private readonly n: number,
    /** Negative when `a` ranks before `b` at equal scores. */
    private readonly tie: (a: number, b: number) => number,
  ) {}

  private worse(i: number, j: number): boolean {
    const si = this.scores[i] ?? 0;
    const sj = this.scores[j] ?? 0;
    if (si !== sj) return si < sj;
    return this.tie(this.ids[i] ?? 0, this.ids[j] ?? 0) > 0;
  }

  private swap(i: number, j: number): void {
    const id = this.ids[i] ?? 0;
    const s = this.scores[i] ?? 0;
    this.ids[i] = this.ids[j] ?? 0;
    this.scores[i] = this.scores[j] ?? 0;
    this.ids[j] = id;
    this.scores[j] = s;
  }

  push(id: number, score: number): void {
    if (this.n <= 0) return;
    if (this.ids.length < this.n) {
      this.ids.push(id);
      this.scores.push(score);
      let i = this.ids.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.worse(i, parent)) break;
        this.swap(i, parent);
        i = parent;
      }
      return;
    }
    // The root is the worst kept: replace it when the candidate beats it.
    const rootScore = this.scores[0] ?? 0;
    if (score < rootScore || (score === rootScore && this.tie(id, this.ids[0] ?? 0) > 0)) return;
    this.ids[0] = id;
    this.scores[0] = score;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.ids.length && this.worse(l, m)) m = l;
      if (r < this.ids.length && this.worse(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
  }

  /** Best first. */
  result(): { id: number; score: number }[] {
    const out = this.ids.map((id, i) => ({ id, score: this.scores[i] ?? 0 }));
    return out.sort((a, b) => (b.score !== a.score ? b.score - a.score : this.tie(a.id, b.id)));
  }
}
