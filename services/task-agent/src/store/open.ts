import { PostgresTaskStore } from './postgres-store.js';
import { SqliteTaskStore } from './sqlite-store.js';
import type { TaskStore } from './types.js';

export interface OpenTaskStoreOptions {
  /** `DATABASE_URL`: PostgreSQL when set (and not empty), else the SQLite file. */
  readonly databaseUrl?: string | undefined;
  /** The SQLite file (used when `databaseUrl` is unset). */
  readonly sqlitePath: string;
  /**
   * Create the database's schema (and the SQLite file) when missing; default true. The task proxy
   * passes false: pointed at the wrong file or database it fails with a clear error instead of
   * answering "no tasks" from an empty one.
   */
  readonly create?: boolean | undefined;
  /** The PostgreSQL schema holding the tables (default `task_agent`). */
  readonly postgresSchema?: string | undefined;
}

/** Opens the store `options` name and creates or migrates its schema (closing it again on failure). */
export async function openTaskStore(options: OpenTaskStoreOptions): Promise<TaskStore> {
  const create = options.create ?? true;
  const url = options.databaseUrl?.trim();
  const store: TaskStore =
    url !== undefined && url !== ''
      ? new PostgresTaskStore(url, {
          create,
          ...(options.postgresSchema === undefined ? {} : { schema: options.postgresSchema }),
        })
      : new SqliteTaskStore(options.sqlitePath, { create });
  try {
    await store.init();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}
