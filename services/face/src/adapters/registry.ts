/** Where registered persons and their embeddings are kept (SQLite here; see sqlite-registry.ts). */

export interface PersonRecord {
  readonly id: number;
  readonly name: string;
  readonly email: string | null;
  readonly pid: string | null;
  /** The recognition model the embeddings came from (embeddings of another model never match). */
  readonly model: string;
  readonly encodingDimensions: number;
  readonly embeddingCount: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface StoredEmbedding {
  readonly personId: number;
  readonly vector: Float32Array;
}

export interface RegisterInput {
  readonly name: string;
  readonly email: string | null;
  readonly pid: string | null;
  readonly model: string;
  /** L2-normalised, all of the model's dimension. */
  readonly embeddings: readonly Float32Array[];
  /** ISO time of the registration. */
  readonly at: string;
}

export interface Registry {
  readonly kind: string;
  /** Every person of `model`, and their embeddings, for the in-memory index. */
  loadAll(model: string): { persons: PersonRecord[]; embeddings: StoredEmbedding[] };
  /**
   * Adds the embeddings to the person of that name, creating the person if new (email and pid are
   * updated when given). One transaction: all of it is stored, or nothing.
   */
  register(input: RegisterInput): PersonRecord;
  list(): PersonRecord[];
  /** True when a person of that name existed. */
  delete(name: string): { deleted: boolean; id: number | null };
  count(): number;
  /** Persons whose embeddings come from a model other than `model`. */
  countOtherModels(model: string): number;
  ping(): boolean;
  close(): void;
}
