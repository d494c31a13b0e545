/**
 * The test control plane's state on disk (which processes run, on which ports), the lock that lets
 * one `up`/`down` run at a time, and the small helpers `up`, `down` and `status` share.
 */
import { createServer, type AddressInfo } from 'node:net';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, type Endpoint } from './api.js';
import { HOST, type Ports } from './components.js';
import { clusterLayout, type ClusterLayout, type Component, type Versions } from './layout.js';
import { IDENTITIES } from './pki.js';
import type { NodeState } from './node.js';
import { readPid, type Matcher } from './processes.js';

export type Log = (line: string) => void;

export interface ProcessRecord {
  pid: number;
  bin: string;
  log: string;
  pidFile: string;
}

export interface ClusterState {
  startedAt: string;
  server: string;
  versions: Versions;
  ports: Ports;
  kubeconfig: string;
  processes: Partial<Record<Component, ProcessRecord>>;
  /** The real node, when `up --node` started one (node.ts). */
  node?: NodeState;
}

export async function readState(layout = clusterLayout()): Promise<ClusterState | undefined> {
  try {
    return JSON.parse(await readFile(layout.stateFile, 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

export async function writeState(layout: ClusterLayout, state: ClusterState): Promise<void> {
  await writeFile(`${layout.stateFile}.tmp`, JSON.stringify(state, null, 2) + '\n');
  await rename(`${layout.stateFile}.tmp`, layout.stateFile);
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** One `up`/`down` at a time per CLINICALSUITE_HOME (the CLI, parallel jest workers, CI). */
export async function withLock<T>(
  layout: ClusterLayout,
  fn: () => Promise<T>,
  timeoutMs = 10 * 60_000,
): Promise<T> {
  await mkdir(layout.dir, { recursive: true });
  const owner = join(layout.lockDir, 'pid');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await mkdir(layout.lockDir);
      await writeFile(owner, `${process.pid}\n`);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = await readPid(owner);
      const age = Date.now() - (await stat(layout.lockDir).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if ((pid !== undefined && !pidAlive(pid)) || (pid === undefined && age > 30_000)) {
        await rm(layout.lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${layout.lockDir} (held by pid ${pid})`);
      await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(layout.lockDir, { recursive: true, force: true });
  }
}

export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, HOST, () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
      if (error instanceof FatalError) throw error;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${why}`);
    }
    await sleep(250);
  }
}

export class FatalError extends Error {}

export function adminEndpoint(state: Pick<ClusterState, 'server'>, caPem: string, token: string): Endpoint {
  return { server: state.server, ca: caPem, token };
}

export async function readyz(endpoint: Endpoint): Promise<boolean> {
  try {
    const res = await call(endpoint, 'GET', '/readyz', undefined, undefined, 3_000);
    return res.status === 200;
  } catch {
    return false;
  }
}

export async function adminCredentials(layout: ClusterLayout): Promise<{ token: string; caPem: string }> {
  const caPem = await readFile(join(layout.pkiDir, 'ca.crt'), 'utf8');
  const user = IDENTITIES.admin.user;
  const line = (await readFile(join(layout.pkiDir, 'tokens.csv'), 'utf8'))
    .split('\n')
    .find((l) => l.split(',')[1] === user);
  if (!line) throw new Error(`no token for ${user} in ${layout.pkiDir}/tokens.csv`);
  return { token: line.split(',')[0] ?? '', caPem };
}

/** A process of this cluster: one of our cached binaries, started with this cluster's paths. */
export function ownedBy(layout: ClusterLayout, component?: Component): Matcher {
  const prefix = join(layout.binDir, component ? `${component}-` : '');
  return (argv) =>
    argv[0] !== undefined && argv[0].startsWith(prefix) && argv.slice(1).some((a) => a.includes(layout.dir));
}

export interface NodeList {
  items: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[];
}
