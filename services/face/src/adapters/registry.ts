import { ConflictError } from '@clinicalsuite/kit';

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

/** Another replica changed a person (PostgreSQL): reload or drop it from the index. */
export interface RegistryChange {
  readonly kind: 'upsert' | 'delete';
  readonly personId: number;
}

export interface RegistryFeed {
  lost(error: Error): void;
  restored(): void;
  /**
   * Read the whole store again: a notification may have been missed without the connection
   * failing (the store calls it periodically; see the face README's "Several replicas").
   */
  resync(): void;
}

export interface Registry {
  /** Every person of `model`, and their embeddings, for the in-memory index. */
  loadAll(model: string): Promise<{ persons: PersonRecord[]; embeddings: StoredEmbedding[] }>;
  /** One person of `model` and their embeddings, or null when gone (or of another model). */
  loadPerson(id: number, model: string): Promise<{ person: PersonRecord; embeddings: Float32Array[] } | null>;
  /**
   * Adds the embeddings to the person of that name, creating the person if new (email and pid are
   * updated when given). One transaction: all of it is stored, or nothing.
   */
  register(input: RegisterInput): Promise<PersonRecord>;
  list(): Promise<PersonRecord[]>;
  /** Whether a person of that name existed, and its id. */
  delete(name: string): Promise<{ deleted: boolean; id: number | null }>;
  count(): Promise<number>;
  /** Persons whose embeddings come from a model other than `model`. */
  countOtherModels(model: string): Promise<number>;
  ping(): Promise<boolean>;
  /**
   * Changes made by other processes sharing the store (none for SQLite: one writer), listened for
   * when this resolves. `feed.lost` says the feed broke (changes are missed from then on, so the
   * index may be stale; also called for each failed attempt to reconnect); `feed.restored` that it
   * listens again (what changed in between is not replayed: read the store again); `feed.resync`
   * that the store should be read again anyway, periodically.
   */
  subscribe(listener: (change: RegistryChange) => void, feed: RegistryFeed): Promise<void>;
  close(): Promise<void>;
}

/** A persons row as both stores select it (PostgreSQL returns bigints as strings). */
export interface PersonRow {
  id: number | string;
  name: string;
  email: string | null;
  pid: string | null;
  model: string;
  dim: number;
  n: number | string;
  created_at: string;
  updated_at: string;
}

export function personRecord(row: PersonRow): PersonRecord {
  return {
    id: Number(row.id),
    name: row.name,
    email: row.email,
    pid: row.pid,
    model: row.model,
    encodingDimensions: row.dim,
    embeddingCount: Number(row.n),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A known person enrolled with another recognizer: adding this model's embeddings would mix spaces. */
export function modelConflict(name: string, registeredWith: string, running: string): ConflictError {
  return new ConflictError(
    `Person '${name}' was registered with the recognition model ${registeredWith}; ` +
      `this service runs ${running}. Delete the person and register again.`,
  );
}

/** Embeddings are stored as little-endian float32 bytes. */
export function embeddingToBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

export function embeddingFromBytes(blob: Buffer): Float32Array {
  // Copy: the Buffer may share an unaligned pool slab.
  const out = new Float32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}
