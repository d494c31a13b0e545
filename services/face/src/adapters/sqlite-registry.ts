/* eslint-disable @typescript-eslint/require-await -- better-sqlite3 is synchronous; the Registry
   interface is asynchronous for PostgreSQL, and async methods turn SQLite's throws into rejections. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import {
  embeddingFromBytes,
  embeddingToBytes,
  modelConflict,
  personRecord,
  type PersonRow,
  type PersonRecord,
  type RegisterInput,
  type Registry,
  type StoredEmbedding,
} from './registry.js';

/**
 * The embedded registry: one SQLite file on the service's volume in WAL mode with
 * `synchronous=FULL`, so a registration is on disk when the response says so, and a process killed
 * mid-write leaves the last committed state (each registration is one transaction). For several
 * replicas use PostgreSQL (DATABASE_URL): SQLite allows one writer process.
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS persons (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  email TEXT,
  pid TEXT,
  model TEXT NOT NULL,
  dim INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
  id INTEGER PRIMARY KEY,
  person_id INTEGER NOT NULL REFERENCES persons(id) ON DELETE CASCADE,
  vector BLOB NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS embeddings_person ON embeddings(person_id);
`;

const PERSON_SELECT = `
SELECT p.id, p.name, p.email, p.pid, p.model, p.dim, p.created_at, p.updated_at,
       (SELECT count(*) FROM embeddings e WHERE e.person_id = p.id) AS n
FROM persons p`;

export class SqliteRegistry implements Registry {
  private readonly db: Database.Database;

  constructor(readonly path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
  }

  async loadAll(model: string): Promise<{ persons: PersonRecord[]; embeddings: StoredEmbedding[] }> {
    const persons = this.db
      .prepare<[string], PersonRow>(`${PERSON_SELECT} WHERE p.model = ?`)
      .all(model)
      .map(personRecord);
    const embeddings = this.db
      .prepare<[string], { person_id: number; vector: Buffer }>(
        'SELECT e.person_id, e.vector FROM embeddings e JOIN persons p ON p.id = e.person_id WHERE p.model = ?',
      )
      .all(model)
      .map((row) => ({ personId: row.person_id, vector: embeddingFromBytes(row.vector) }));
    return { persons, embeddings };
  }

  async register(input: RegisterInput): Promise<PersonRecord> {
    const dim = input.embeddings[0]?.length;
    if (dim === undefined) throw new Error('register needs at least one embedding');
    const run = this.db.transaction((): PersonRecord => {
      const existing = this.db
        .prepare<[string], { id: number; model: string; dim: number }>(
          'SELECT id, model, dim FROM persons WHERE name = ?',
        )
        .get(input.name);
      let id: number;
      if (existing === undefined) {
        id = Number(
          this.db
            .prepare(
              'INSERT INTO persons (name, email, pid, model, dim, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
            )
            .run(input.name, input.email, input.pid, input.model, dim, input.at, input.at).lastInsertRowid,
        );
      } else {
        if (existing.model !== input.model || existing.dim !== dim) {
          throw modelConflict(input.name, existing.model, input.model);
        }
        id = existing.id;
        this.db
          .prepare(
            'UPDATE persons SET email = coalesce(?, email), pid = coalesce(?, pid), updated_at = ? WHERE id = ?',
          )
          .run(input.email, input.pid, input.at, id);
      }
      const insert = this.db.prepare(
        'INSERT INTO embeddings (person_id, vector, created_at) VALUES (?, ?, ?)',
      );
      for (const e of input.embeddings) insert.run(id, embeddingToBytes(e), input.at);
      return this.get(id);
    });
    return run.immediate();
  }

  async list(): Promise<PersonRecord[]> {
    return this.db.prepare<[], PersonRow>(`${PERSON_SELECT} ORDER BY p.name`).all().map(personRecord);
  }

  async delete(name: string): Promise<{ deleted: boolean; id: number | null }> {
    const row = this.db.prepare<[string], { id: number }>('SELECT id FROM persons WHERE name = ?').get(name);
    if (row === undefined) return { deleted: false, id: null };
    this.db.prepare('DELETE FROM persons WHERE id = ?').run(row.id);
    return { deleted: true, id: row.id };
  }

  async count(): Promise<number> {
    return this.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM persons').get()?.n ?? 0;
  }

  async countOtherModels(model: string): Promise<number> {
    return (
      this.db
        .prepare<[string], { n: number }>('SELECT count(*) AS n FROM persons WHERE model <> ?')
        .get(model)?.n ?? 0
    );
  }

  async ping(): Promise<boolean> {
    try {
      return this.db.prepare<[], { ok: number }>('SELECT 1 AS ok').get()?.ok === 1;
    } catch {
      return false;
    }
  }

  async loadPerson(
    id: number,
    model: string,
  ): Promise<{ person: PersonRecord; embeddings: Float32Array[] } | null> {
    const row = this.db
      .prepare<[number, string], PersonRow>(`${PERSON_SELECT} WHERE p.id = ? AND p.model = ?`)
      .get(id, model);
    if (row === undefined) return null;
    const embeddings = this.db
      .prepare<[number], { vector: Buffer }>('SELECT vector FROM embeddings WHERE person_id = ?')
      .all(id)
      .map((r) => embeddingFromBytes(r.vector));
    return { person: personRecord(row), embeddings };
  }

  async subscribe(): Promise<void> {
    // One writer process: there are no other replicas' changes to hear about.
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private get(id: number): PersonRecord {
    const row = this.db.prepare<[number], PersonRow>(`${PERSON_SELECT} WHERE p.id = ?`).get(id);
    if (row === undefined) throw new Error(`person ${String(id)} vanished`);
    return personRecord(row);
  }
}
