/**
 * Helpers for the task store's tests: one real database of each kind per test (a fresh SQLite file;
 * a fresh schema on one throwaway PostgreSQL server per test file), a controllable clock, a NextRun
 * the tests reason about, and the store compiled to plain JS for child processes (several processes
 * on one SQLite file, as the agent and the task proxy are).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformFileSync } from '@swc/core';
import { PostgresTaskStore } from '../../services/task-agent/src/store/postgres-store.js';
import { SqliteTaskStore } from '../../services/task-agent/src/store/sqlite-store.js';
import type { NextRun, TaskStore } from '../../services/task-agent/src/store/types.js';
import { postgresBinDir, startPostgres, type TestPostgres } from '../fixtures/postgres.js';
import { reportAbsent } from '../fixtures/real-component.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export type StoreKind = 'sqlite' | 'postgresql';
export const STORE_KINDS: readonly StoreKind[] = ['sqlite', 'postgresql'];

export const postgresPresent = postgresBinDir() !== undefined;
if (!postgresPresent)
  reportAbsent('the postgresql store tests', 'PostgreSQL is not installed (apt-get install postgresql)');
/** The kinds that can run here. */
export const RUNNABLE_KINDS: readonly StoreKind[] = STORE_KINDS.filter(
  (k) => k === 'sqlite' || postgresPresent,
);

/** The test clock: T0 plus some milliseconds. */
export const T0 = new Date('2026-11-22T10:00:00.000Z');
export const at = (ms: number): Date => new Date(T0.getTime() + ms);
export const MINUTE = 60_000;

/**
 * The tests' schedule clock: `never` never fires, `* * * * *` fires at every whole minute, and
 * anything else (a real expression the test does not evaluate) fires hourly, on the hour.
 */
export const testNextRun: NextRun = (cron, _timezone, after) => {
  if (cron === 'never') return null;
  const step = cron === '* * * * *' ? MINUTE : 60 * MINUTE;
  return new Date(Math.floor(after.getTime() / step) * step + step);
};

/** A database of one kind; every `open()` is another store (another connection) on it. */
export interface TestDatabase {
  readonly kind: StoreKind;
  /** The SQLite file, or the PostgreSQL URL. */
  readonly location: string;
  /** The PostgreSQL schema (undefined for SQLite). */
  readonly schema: string | undefined;
  open(options?: { create?: boolean; init?: boolean }): Promise<TaskStore>;
}

/** Databases for the tests of one file: start() once, database() per test, stop() at the end. */
export class TestDatabases {
  private pg: TestPostgres | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'task-store-test-'));
  private readonly opened: TaskStore[] = [];
  private count = 0;

  async start(kinds: readonly StoreKind[] = RUNNABLE_KINDS): Promise<void> {
    if (kinds.includes('postgresql')) this.pg = await startPostgres();
  }

  get postgresUrl(): string {
    if (this.pg === undefined) throw new Error('PostgreSQL was not started');
    return this.pg.url;
  }

  database(kind: StoreKind): TestDatabase {
    this.count += 1;
    const name = `t${String(this.count)}`;
    const location = kind === 'sqlite' ? join(this.dir, `${name}.db`) : this.postgresUrl;
    const schema = kind === 'sqlite' ? undefined : name;
    return {
      kind,
      location,
      schema,
      open: async (options = {}) => {
        const create = options.create ?? true;
        const store: TaskStore =
          kind === 'sqlite'
            ? new SqliteTaskStore(location, { create })
            : new PostgresTaskStore(location, { schema: name, create });
        this.opened.push(store);
        if (options.init ?? true) await store.init();
        return store;
      },
    };
  }

  /** Closes every store the tests opened (closing twice is harmless). */
  async closeStores(): Promise<void> {
    const stores = this.opened.splice(0);
    await Promise.all(stores.map((s) => s.close()));
  }

  async stop(): Promise<void> {
    await this.closeStores();
    this.pg?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// The store as JS for child processes ----------------------------------------------------------

/** The store files a child needs: SQLite's store, the shared mapping, and the records. */
const CHILD_SOURCES = ['store/sqlite-store.ts', 'store/sql.ts', 'store/types.ts', 'domain/types.ts'];

/**
 * A child program on one SQLite file, started with `go` on stdin so that every child starts its
 * work at the same moment:
 * - `claim <file> <worker> <workMs>`: claims until nothing is pending (pausing workMs after each
 *   claim, like a worker running it), then prints the claimed task ids as JSON;
 * - `fire <file> <nowIso>`: fires the due schedules at that time once, prints the created task ids;
 * - `init <file>`: creates the schema (the file may not exist yet) and one task, prints its id.
 * Every child opens its store before `go` and runs `init()` after it.
 */
const CHILD_PROGRAM = `
import { SqliteTaskStore } from './store/sqlite-store.js';
const [mode, file, arg1, arg2] = process.argv.slice(2);
const store = new SqliteTaskStore(file, { create: mode === 'init', busyTimeoutMs: 30000 });
const hourly = (_cron, _tz, after) => new Date(Math.floor(after.getTime() / 3600000) * 3600000 + 3600000);
process.stdout.write('ready\\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
process.stdin.destroy();
await store.init();
const ids = [];
if (mode === 'claim') {
  for (;;) {
    const claim = await store.claimTask(arg1, 60000, new Date());
    if (claim === undefined) break;
    ids.push(claim.task.id);
    await new Promise((resolve) => setTimeout(resolve, Number(arg2)));
  }
} else if (mode === 'fire') {
  for (const fired of await store.fireDueSchedules(hourly, new Date(arg1))) ids.push(fired.task.id);
} else if (mode === 'init') {
  ids.push((await store.createTask({ title: 'from ' + process.pid, description: '', priority: 5 }, new Date())).id);
}
await store.close();
process.stdout.write(JSON.stringify(ids) + '\\n');
`;

/** Compiles the SQLite store (types stripped by SWC) into a temp dir; returns the child program. */
export function compileStoreChild(): { program: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'task-store-child-'));
  const src = join(REPO_ROOT, 'services/task-agent/src');
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  for (const file of CHILD_SOURCES) {
    const { code } = transformFileSync(join(src, file), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'es6' },
      sourceMaps: false,
    });
    const out = join(dir, file.replace(/\.ts$/, '.js'));
    mkdirSync(join(out, '..'), { recursive: true });
    writeFileSync(out, code);
  }
  const program = join(dir, 'child.js');
  writeFileSync(program, CHILD_PROGRAM);
  return { program, dir };
}

/**
 * Starts `args.length` children of the program, waits until every one has opened the store, says
 * `go` to all at once, and returns what each printed (parsed JSON); children still running after
 * `timeoutMs` are killed (and the call fails).
 */
export async function runChildrenTogether(
  program: string,
  args: readonly string[][],
  timeoutMs = 30_000,
): Promise<number[][]> {
  const children = args.map((a) => {
    const child = spawn(process.execPath, [program, ...a], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const ready = new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (out.includes('ready\n')) resolve();
      };
      child.stdout.on('data', check);
      child.once('exit', (code) => reject(new Error(`child exited (${String(code)}) before ready: ${err}`)));
    });
    const done = new Promise<number[]>((resolve, reject) => {
      child.once('exit', (code) => {
        if (code !== 0) {
          reject(new Error(`child exited with ${String(code)}: ${err}`));
          return;
        }
        const last = out.trim().split('\n').at(-1) ?? '[]';
        resolve(JSON.parse(last) as number[]);
      });
    });
    done.catch(() => undefined); // awaited below; a child dying early must not be "unhandled"
    return { child, ready, done };
  });
  try {
    await Promise.all(children.map((c) => c.ready));
  } catch (error) {
    for (const c of children) c.child.kill();
    await Promise.allSettled(children.map((c) => c.done));
    throw error;
  }
  for (const c of children) c.child.stdin.end('go\n');
  // A child stuck (a lock never granted) must fail the test, not outlive it.
  const deadline = setTimeout(() => {
    for (const c of children) c.child.kill('SIGKILL');
  }, timeoutMs);
  try {
    return await Promise.all(children.map((c) => c.done));
  } finally {
    clearTimeout(deadline);
  }
}
