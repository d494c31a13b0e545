/**
 * The task agent's store: the TaskStore contract, its SQLite and PostgreSQL implementations,
 * `openTaskStore` choosing between them, and the read operations' bodies shared by the agent and the
 * task proxy. (The records themselves are in `../domain/types.ts`.)
 */
export type {
  CancelResult,
  Claim,
  DeleteTaskResult,
  LeaseState,
  NewSchedule,
  NewTask,
  NextRun,
  Recovered,
  RunOutcome,
  TaskStore,
} from './types.js';
export { openTaskStore, type OpenTaskStoreOptions } from './open.js';
export {
  SQLITE_BUSY_TIMEOUT_MS,
  SQLITE_SCHEMA_VERSION,
  SqliteTaskStore,
  type SqliteTaskStoreOptions,
} from './sqlite-store.js';
export {
  POSTGRES_DEFAULT_SCHEMA,
  POSTGRES_SCHEMA_VERSION,
  PostgresTaskStore,
  type PostgresTaskStoreOptions,
} from './postgres-store.js';
export { messages as storeMessages, storable, UnknownTaskError } from './sql.js';
export * from './queries.js';
