import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import {
  embeddingFromBytes,
  embeddingToBytes,
  modelConflict,
  personRecord,
  type PersonRow,
  type PersonRecord,
  type RegisterInput,
  type Registry,
  type RegistryChange,
  type RegistryFeed,
  type StoredEmbedding,
} from './registry.js';

/**
 * The registry in PostgreSQL (DATABASE_URL), for several replicas: the same tables as SQLite,
 * one transaction per registration (the person row locked with FOR UPDATE, so two replicas adding
 * photos to one person never interleave), and a NOTIFY on `face_registry` after each commit. Every
 * replica LISTENs and reloads or drops that person in its in-memory index, so a person registered
 * through one replica is recognized by all of them. A dropped LISTEN connection (PostgreSQL
 * restarted) is reconnected with backoff; the replica reads the registry again once it listens.
 *
 * A connection can also die silently (a NAT or firewall forgetting it, a partition): no error
 * arrives and notifications just stop. So the LISTEN connection is asked `SELECT 1` every
 * `listenCheckMs` and counted dead when the answer takes longer than that (then dropped and
 * reconnected as above); every connection has TCP keepalive; every query and connection attempt
 * fails after `queryTimeoutMs`; and the whole registry is read again every `reloadMs`, which
 * bounds how long any missed notification can leave a replica wrong.
 */

const CHANNEL = 'face_registry';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS face_persons (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  email TEXT,
  pid TEXT,
  model TEXT NOT NULL,
  dim INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS face_embeddings (
  id BIGSERIAL PRIMARY KEY,
  person_id BIGINT NOT NULL REFERENCES face_persons(id) ON DELETE CASCADE,
  vector BYTEA NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS face_embeddings_person ON face_embeddings(person_id);
`;

const PERSON_SELECT = `
SELECT p.id, p.name, p.email, p.pid, p.model, p.dim, p.created_at, p.updated_at,
       (SELECT count(*) FROM face_embeddings e WHERE e.person_id = p.id) AS n
FROM face_persons p`;

/** How long to wait before reconnecting the LISTEN connection: doubling from `initialMs` up to `maxMs`. */
export interface ReconnectBackoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

export interface PostgresRegistryOptions {
  /** Default: 500 ms doubling up to 30 s. */
  readonly reconnect?: ReconnectBackoff;
  /** How often the LISTEN connection is checked, and how long its answer may take. Default 15 s. */
  readonly listenCheckMs?: number;
  /** How often the whole registry is read again (`feed.resync`); 0 never. Default 5 min. */
  readonly reloadMs?: number;
  /** Longest a query or a connection attempt may take. Default 30 s. */
  readonly queryTimeoutMs?: number;
}

/** When TCP keepalive starts probing an idle connection. */
const KEEPALIVE_DELAY_MS = 10_000;

interface Timing {
  readonly backoff: ReconnectBackoff;
  readonly listenCheckMs: number;
  readonly reloadMs: number;
  readonly queryTimeoutMs: number;
}

export class PostgresRegistry implements Registry {
  private listener: pg.Client | undefined;
  /** The LISTEN connection's health check, and the periodic full read. */
  private listenerCheck: NodeJS.Timeout | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private readonly closing = new AbortController();

  private isClosed(): boolean {
    return this.closing.signal.aborted;
  }

  private constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly timing: Timing,
  ) {}

  /** Connects and creates the tables when missing (several replicas may race: IF NOT EXISTS under a lock). */
  static async open(url: string, options: PostgresRegistryOptions = {}): Promise<PostgresRegistry> {
    const timing: Timing = {
      backoff: options.reconnect ?? { initialMs: 500, maxMs: 30_000 },
      listenCheckMs: options.listenCheckMs ?? 15_000,
      reloadMs: options.reloadMs ?? 300_000,
      queryTimeoutMs: options.queryTimeoutMs ?? 30_000,
    };
    const pool = new pg.Pool({ ...clientConfig(url, timing), max: 4 });
    // An idle connection that fails (PostgreSQL restarted, the connection cut) is dropped by the
    // pool, and the next query opens another; unheard, the pool's 'error' would end the process.
    pool.on('error', () => undefined);
    try {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock(4247001)');
        await client.query(SCHEMA);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PostgresRegistry(pool, url, timing);
  }

  async loadAll(model: string): Promise<{ persons: PersonRecord[]; embeddings: StoredEmbedding[] }> {
    const persons = await this.pool.query<PersonRow>(`${PERSON_SELECT} WHERE p.model = $1`, [model]);
    const embeddings = await this.pool.query<{ person_id: string; vector: Buffer }>(
      'SELECT e.person_id, e.vector FROM face_embeddings e JOIN face_persons p ON p.id = e.person_id WHERE p.model = $1',
      [model],
    );
    return {
      persons: persons.rows.map(personRecord),
      embeddings: embeddings.rows.map((r) => ({
        personId: Number(r.person_id),
        vector: embeddingFromBytes(r.vector),
      })),
    };
  }

  async loadPerson(
    id: number,
    model: string,
  ): Promise<{ person: PersonRecord; embeddings: Float32Array[] } | null> {
    const person = await this.pool.query<PersonRow>(`${PERSON_SELECT} WHERE p.id = $1 AND p.model = $2`, [
      id,
      model,
    ]);
    const row = person.rows[0];
    if (row === undefined) return null;
    const embeddings = await this.pool.query<{ vector: Buffer }>(
      'SELECT vector FROM face_embeddings WHERE person_id = $1',
      [id],
    );
    return {
      person: personRecord(row),
      embeddings: embeddings.rows.map((r) => embeddingFromBytes(r.vector)),
    };
  }

  async register(input: RegisterInput): Promise<PersonRecord> {
    const dim = input.embeddings[0]?.length;
    if (dim === undefined) throw new Error('register needs at least one embedding');
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      // Serialise registrations of one name across replicas (the row may not exist yet).
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [input.name]);
      const existing = await client.query<{ id: string; model: string; dim: number }>(
        'SELECT id, model, dim FROM face_persons WHERE name = $1 FOR UPDATE',
        [input.name],
      );
      let id: number;
      const found = existing.rows[0];
      if (found === undefined) {
        const inserted = await client.query<{ id: string }>(
          'INSERT INTO face_persons (name, email, pid, model, dim, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id',
          [input.name, input.email, input.pid, input.model, dim, input.at],
        );
        id = Number(inserted.rows[0]?.id);
      } else {
        if (found.model !== input.model || found.dim !== dim) {
          throw modelConflict(input.name, found.model, input.model);
        }
        id = Number(found.id);
        await client.query(
          'UPDATE face_persons SET email = coalesce($1, email), pid = coalesce($2, pid), updated_at = $3 WHERE id = $4',
          [input.email, input.pid, input.at, id],
        );
      }
      for (const e of input.embeddings) {
        await client.query(
          'INSERT INTO face_embeddings (person_id, vector, created_at) VALUES ($1, $2, $3)',
          [id, embeddingToBytes(e), input.at],
        );
      }
      await client.query(`SELECT pg_notify('${CHANNEL}', $1)`, [`upsert:${String(id)}`]);
      const record = await client.query<PersonRow>(`${PERSON_SELECT} WHERE p.id = $1`, [id]);
      await client.query('COMMIT');
      const row = record.rows[0];
      if (row === undefined) throw new Error(`person ${String(id)} vanished`);
      return personRecord(row);
    } catch (error) {
      broken = !(await rollback(client));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async list(): Promise<PersonRecord[]> {
    return (await this.pool.query<PersonRow>(`${PERSON_SELECT} ORDER BY p.name`)).rows.map(personRecord);
  }

  async delete(name: string): Promise<{ deleted: boolean; id: number | null }> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const gone = await client.query<{ id: string }>(
        'DELETE FROM face_persons WHERE name = $1 RETURNING id',
        [name],
      );
      const id = gone.rows[0]?.id;
      if (id !== undefined) await client.query(`SELECT pg_notify('${CHANNEL}', $1)`, [`delete:${id}`]);
      await client.query('COMMIT');
      return id === undefined ? { deleted: false, id: null } : { deleted: true, id: Number(id) };
    } catch (error) {
      broken = !(await rollback(client));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async count(): Promise<number> {
    return Number(
      (await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM face_persons')).rows[0]?.n ?? 0,
    );
  }

  async countOtherModels(model: string): Promise<number> {
    const r = await this.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM face_persons WHERE model <> $1',
      [model],
    );
    return Number(r.rows[0]?.n ?? 0);
  }

  async ping(): Promise<boolean> {
    try {
      await this.pool.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  async subscribe(listener: (change: RegistryChange) => void, feed: RegistryFeed): Promise<void> {
    // The first connection must work (the service does not start without it); later drops reconnect.
    await this.listen(listener, feed);
    if (this.timing.reloadMs > 0 && !this.isClosed()) {
      this.resyncTimer = setInterval(() => {
        feed.resync();
      }, this.timing.reloadMs);
      this.resyncTimer.unref();
    }
  }

  /**
   * Connects, LISTENs, checks the connection every `listenCheckMs`, and on a drop (an error, an
   * end, a check unanswered in time) tells `feed` and reconnects with backoff.
   */
  private async listen(listener: (change: RegistryChange) => void, feed: RegistryFeed): Promise<void> {
    const client = new pg.Client(clientConfig(this.url, this.timing));
    let listening = false;
    let dropped = false;
    const drop = (error: Error): void => {
      // Before LISTEN succeeded the caller sees the failure; after close() nothing is lost.
      if (!listening || dropped || this.isClosed()) return;
      dropped = true;
      if (this.listener === client) {
        this.listener = undefined;
        clearInterval(this.listenerCheck);
      }
      // With the check's query in flight, end() closes the socket at once (the server may never answer).
      client.end().catch(() => undefined);
      feed.lost(error);
      void this.reconnect(listener, feed);
    };
    client.on('error', drop);
    client.on('end', () => {
      drop(new Error('the PostgreSQL connection listening for registry changes ended'));
    });
    client.on('notification', (message) => {
      if (message.channel !== CHANNEL || message.payload === undefined) return;
      const [kind, id] = message.payload.split(':');
      if ((kind === 'upsert' || kind === 'delete') && id !== undefined)
        listener({ kind, personId: Number(id) });
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.isClosed()) {
      await client.end().catch(() => undefined);
      return;
    }
    listening = true;
    this.listener = client;
    let checking = false;
    this.listenerCheck = setInterval(() => {
      if (checking) return;
      checking = true;
      answersWithin(client, this.timing.listenCheckMs).then(
        () => {
          checking = false;
        },
        (error: unknown) => {
          drop(error instanceof Error ? error : new Error(String(error)));
        },
      );
    }, this.timing.listenCheckMs);
    this.listenerCheck.unref();
  }

  private async reconnect(listener: (change: RegistryChange) => void, feed: RegistryFeed): Promise<void> {
    for (let attempt = 0; !this.isClosed(); attempt++) {
      const { backoff } = this.timing;
      const delay = Math.min(backoff.maxMs, backoff.initialMs * 2 ** attempt);
      try {
        await sleep(delay, undefined, { signal: this.closing.signal });
        await this.listen(listener, feed);
      } catch (error) {
        if (this.isClosed()) return;
        feed.lost(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      if (!this.isClosed()) feed.restored();
      return;
    }
  }

  async close(): Promise<void> {
    this.closing.abort();
    clearInterval(this.listenerCheck);
    clearInterval(this.resyncTimer);
    await this.listener?.end();
    await this.pool.end();
  }
}

/** Every connection's settings: keepalive, and no query or connection attempt without a limit. */
function clientConfig(url: string, timing: Timing): pg.ClientConfig {
  return {
    connectionString: url,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    connectionTimeoutMillis: timing.queryTimeoutMs,
    query_timeout: timing.queryTimeoutMs,
  };
}

/** Rolls back a failed transaction; false when the connection could not (it is then not reused). */
async function rollback(client: pg.PoolClient): Promise<boolean> {
  try {
    await client.query('ROLLBACK');
    return true;
  } catch {
    return false;
  }
}

/** Resolves when the connection answers `SELECT 1` within `ms`; rejects saying so otherwise. */
async function answersWithin(client: pg.Client, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(
        new Error(
          `the PostgreSQL connection listening for registry changes did not answer a check in ${String(ms)} ms`,
        ),
      );
    }, ms);
  });
  try {
    await Promise.race([client.query('SELECT 1'), late]);
  } finally {
    clearTimeout(timer);
  }
}
