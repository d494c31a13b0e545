import { EmbeddingIndex, type CoarseScorer } from './embedding-index.js';
import { confidenceOf, distanceOf, round4 } from './similarity.js';

/**
 * The registry in memory: every embedding in the index and each person's name by id. Matching a
 * face gives the best person; it is `recognized` when the confidence reaches the threshold.
 */

export const UNKNOWN_PERSON = 'Unknown';

export interface FaceMatch {
  readonly recognized: boolean;
  /** The matched person, or `Unknown`. */
  readonly personName: string;
  /** Of the best match, recognized or not (0 when the registry is empty). */
  readonly confidence: number;
  readonly distance: number;
}

export class People {
  private readonly names = new Map<number, string>();
  private readonly index: EmbeddingIndex;

  constructor(
    readonly dim: number,
    private readonly scorer?: CoarseScorer,
  ) {
    this.index = new EmbeddingIndex(dim);
  }

  get persons(): number {
    return this.names.size;
  }

  get embeddings(): number {
    return this.index.size;
  }

  add(personId: number, name: string, embeddings: readonly Float32Array[]): void {
    this.names.set(personId, name);
    for (const e of embeddings) this.index.add(personId, e);
  }

  remove(personId: number): void {
    this.names.delete(personId);
    this.index.remove(personId);
  }

  async match(embeddings: readonly Float32Array[], threshold: number): Promise<FaceMatch[]> {
    const found = await this.index.find(embeddings, { scorer: this.scorer });
    return found.map((best) => {
      if (best === undefined)
        return { recognized: false, personName: UNKNOWN_PERSON, confidence: 0, distance: 1 };
      const confidence = confidenceOf(best.cosine);
      const recognized = confidence >= threshold;
      return {
        recognized,
        personName: recognized ? (this.names.get(best.personId) ?? UNKNOWN_PERSON) : UNKNOWN_PERSON,
        confidence: round4(confidence),
        distance: round4(distanceOf(best.cosine)),
      };
    });
  }
}
