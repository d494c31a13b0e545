/**
 * Runs the built local runner (`operator/dist/local/main.js`) against fixture services in a temp
 * directory, and reads what it prints. Not a test file: the runner tests use it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { COMPONENTS } from '../../../operator/src/api/v1alpha1/index.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const RUNNER_MAIN = join(REPO, 'operator', 'dist', 'local', 'main.js');
const FIXTURE = join(REPO, 'test', 'fixtures', 'services', 'fixture-service.mjs');
const KIT_FIXTURE = join(REPO, 'test', 'fixtures', 'services', 'kit-service.mjs');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** The runner tests run the build: fail clearly when it is missing or older than the sources. */
export function assertRunnerBuilt(): void {
  const why = !existsSync(RUNNER_MAIN)
    ? 'is missing'
    : newestMtime(join(REPO, 'operator', 'dist')) + 1000 < newestMtime(join(REPO, 'operator', 'src'))
      ? 'is older than operator/src'
      : null;
  if (why) throw new Error(`${RUNNER_MAIN} ${why}: run \`npm run build\` first (\`npm test\` does)`);
}

/**
 * The lowest port the kernel hands out for outgoing connections and `listen(0)`
 * (ip_local_port_range; 32768 when it cannot be read).
 */
function ephemeralLow(): number {
  try {
    const low = Number.parseInt(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'), 10);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A base port such that base … base+14 are all free on 127.0.0.1, below the ephemeral range: a
 * port in that range can be taken between this check and the service's listen (or while a service
 * restarts) by any client socket on the machine, and then the service cannot bind for good.
 */
export async function freeBasePort(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  const lowest = 10_000;
  const slots = Math.max(1, Math.floor((ephemeralLow() - 15 - lowest) / 20));
  for (;;) {
    const base = lowest + Math.floor(Math.random() * slots) * 20;
    const results = await Promise.all(Array.from({ length: 15 }, (_, i) => free(base + i)));
    if (results.every(Boolean)) return base;
  }
}

export interface TableRow {
  name: string;
  url: string;
  state: string;
  pid: number | null;
  restarts: number;
  detail: string;
}

/** Every services table in the runner's output, parsed by the header's column positions. */
export function parseTables(stdout: string): TableRow[][] {
  const tables: TableRow[][] = [];
  const lines = stdout.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const header = lines[i] ?? '';
    if (!/^NAME\s+URL\s+STATE\s+PID\s+RESTARTS\s+DETAIL$/.test(header)) continue;
    const starts = ['URL', 'STATE', 'PID', 'RESTARTS', 'DETAIL'].map((h) => header.indexOf(h));
    const rows: TableRow[] = [];
    for (i += 1; i < lines.length && (lines[i] ?? '') !== ''; i++) {
      const line = lines[i] ?? '';
      const cut = [0, ...starts, Infinity].map((s, k, all) => line.slice(s, all[k + 1]).trim());
      const [name = '', url = '', state = '', pid = '', restarts = '', detail = ''] = cut;
      rows.push({
        name,
        url,
        state,
        pid: pid === '-' ? null : Number(pid),
        restarts: Number(restarts),
        detail,
      });
    }
    if (i < lines.length) tables.push(rows);
  }
  return tables;
}

export interface Harness {
  readonly root: string;
  readonly home: string;
  readonly servicesDir: string;
  readonly eventsFile: string;
  readonly basePort: number;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
  /** Waits for a table whose rows satisfy `predicate`; returns its rows. */
  waitForTable(
    predicate: (rows: Map<string, TableRow>) => boolean,
    timeoutMs?: number,
  ): Promise<Map<string, TableRow>>;
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** `[component, pid, event]` of every fixture event line, in order. */
  events(): { component: string; event: string; at: number; pid: number }[];
  /** Kills the runner and every fixture process it may have left, then deletes the temp dir. */
  cleanup(): void;
}

async function until<T>(
  what: string,
  probe: () => T | undefined,
  timeoutMs: number,
  output: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; runner output so far:\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startRunner(options: {
  /** `spec.services`, or a function of the temp paths giving it. */
  services:
    Record<string, unknown> | ((paths: { eventsFile: string; home: string }) => Record<string, unknown>);
  /** Component dirs to create as fixture services. */
  dirs: readonly string[];
  /** Of those, the dirs whose fixture is built on the real service kit. */
  kitDirs?: readonly string[];
  env?: Record<string, string>;
  args?: readonly string[];
}): Promise<Harness> {
  const root = mkdtempSync(join(tmpdir(), 'cs-runner-'));
  const home = join(root, 'home');
  const servicesDir = join(root, 'services');
  const eventsFile = join(root, 'events.log');
  mkdirSync(servicesDir, { recursive: true });
  writeFileSync(join(servicesDir, 'package.json'), '{"type":"module"}\n');
  for (const dir of options.dirs) {
    // At the component's entry, where the runner starts it; a CommonJS entry loads the fixture too.
    const entry = join(
      servicesDir,
      dir,
      Object.values(COMPONENTS).find((c) => c.dir === dir)?.entry ?? 'dist/main.js',
    );
    const fixture = JSON.stringify(
      pathToFileURL(options.kitDirs?.includes(dir) ? KIT_FIXTURE : FIXTURE).href,
    );
    mkdirSync(dirname(entry), { recursive: true });
    writeFileSync(entry, entry.endsWith('.cjs') ? `void import(${fixture});\n` : `import ${fixture};\n`);
  }
  const suiteFile = join(root, 'suite.yaml');
  const services =
    typeof options.services === 'function' ? options.services({ eventsFile, home }) : options.services;
  writeFileSync(
    suiteFile,
    stringify({
      apiVersion: 'clinicalsuite.ai/v1alpha1',
      kind: 'ClinicalSuite',
      metadata: { name: 'test' },
      spec: { services },
    }),
  );
  const basePort = await freeBasePort();
  const child = spawn(process.execPath, [RUNNER_MAIN, ...(options.args ?? [suiteFile])], {
    cwd: REPO,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: root,
      LEAK_CANARY: 'must-not-reach-services',
      CLINICALSUITE_HOME: home,
      CLINICALSUITE_SERVICES_DIR: servicesDir,
      CLINICALSUITE_BASE_PORT: String(basePort),
      CLINICALSUITE_RESTART_BACKOFF_MS: '200',
      CLINICALSUITE_HEALTH_INTERVAL_MS: '100',
      CLINICALSUITE_DEPENDENCY_WAIT_MS: '5000',
      CLINICALSUITE_MODEL_RETRIES: '0',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const output = () => `${out}\n--- stderr ---\n${err}`;
  const events = () =>
    (existsSync(eventsFile) ? readFileSync(eventsFile, 'utf8') : '')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [component = '', event = '', at = '', pid = ''] = line.split(' ');
        return { component, event, at: Date.parse(at), pid: Number(pid.replace('pid=', '')) };
      });
  return {
    root,
    home,
    servicesDir,
    eventsFile,
    basePort,
    child,
    exited,
    stdout: () => out,
    stderr: () => err,
    waitForTable: (predicate, timeoutMs = 10_000) =>
      until(
        'a matching services table',
        () =>
          parseTables(out)
            .map((rows) => new Map(rows.map((r) => [r.name, r])))
            .find(predicate),
        timeoutMs,
        output,
      ),
    waitForOutput: async (text, timeoutMs = 10_000) => {
      await until(
        `output ${String(text)}`,
        () => ((typeof text === 'string' ? out.includes(text) : text.test(out)) ? true : undefined),
        timeoutMs,
        output,
      );
    },
    events,
    cleanup: () => {
      child.kill('SIGKILL');
      const pids = new Set([
        ...events().map((e) => e.pid),
        ...parseTables(out).flatMap((rows) => rows.map((r) => r.pid)),
      ]);
      for (const pid of pids) {
        if (!pid) continue;
        for (const target of [-pid, pid]) {
          try {
            process.kill(target, 'SIGKILL');
          } catch {
            // gone already
          }
        }
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function waitUntilDead(pids: readonly number[], timeoutMs = 3000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let alive = pids.filter(isAlive);
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    alive = alive.filter(isAlive);
  }
  return alive;
}

export const eventsEnv = (file: string) => ({ name: 'FIXTURE_EVENTS_FILE', value: file });
export const row = (rows: Map<string, TableRow>, name: string): TableRow => {
  const found = rows.get(name);
  if (!found) throw new Error(`no row ${name} in the table`);
  return found;
};
export const allReady = (names: string[]) => (rows: Map<string, TableRow>) =>
  names.every((n) => rows.get(n)?.state === 'ready');
