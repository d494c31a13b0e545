/**
 * The test control plane's lifecycle: build (if needed), up, down, status. Used by the
 * `npm run cluster` CLI and by integration tests alike.
 *
 * `up` is idempotent: a healthy running cluster is reused; a half-dead one (a crash, a reboot) is
 * stopped and started afresh. `down` stops every process of this CLINICALSUITE_HOME's cluster,
 * found by pid file and by a /proc scan, SIGTERM then SIGKILL, and removes its state.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call } from './api.js';
import {
  apiserverArgs,
  apiserverUrl,
  controllerManagerArgs,
  etcdArgs,
  HOST,
  kwokArgs,
  renderKubeconfig,
  schedulerArgs,
  SERVICE_IP,
  type ComponentPaths,
  type Ports,
} from './components.js';
import { applyFixtures, waitForWorkloadReadiness } from './seed.js';
import { NODE_HOST_IP } from './node-config.js';
import {
  NODE_COMPONENTS,
  nodeLayout,
  nodeProcessesOf,
  nodeProcessMatcher,
  nodeProgram,
  startNode,
  stopNode,
} from './node.js';
import {
  binaries,
  BUILD_SCRIPT,
  clusterLayout,
  COMPONENTS,
  missingBinaries,
  NODE_IMAGES_SCRIPT,
  nodeBinaries,
  readVersions,
  type Binaries,
  type ClusterLayout,
  type Component,
  type Versions,
} from './layout.js';
import { IDENTITIES, makePki } from './pki.js';
import {
  adminCredentials,
  adminEndpoint,
  freePorts,
  FatalError,
  ownedBy,
  readState,
  readyz,
  waitFor,
  withLock,
  writeState,
  type ClusterState,
  type Log,
  type ProcessRecord,
} from './state.js';

import { findProcesses, isOurProcess, readPid, startDetached, stopProcess, tail } from './processes.js';

export interface ClusterInfo {
  kubeconfig: string;
  server: string;
  /** The admin bearer token (system:masters) and the CA, for clients that skip the kubeconfig. */
  token: string;
  caPem: string;
  /** False when `up` found the cluster already running and reused it. */
  startedNow: boolean;
  state: ClusterState;
}

export interface UpOptions {
  log?: Log;
  /** Also start a real node (node.ts); a cluster already up without one is replaced. */
  node?: boolean;
  /** Build missing binaries (default true); false fails fast instead. */
  build?: boolean;
  layout?: ClusterLayout;
}

const STOP_ORDER: readonly Component[] = [
  'kwok',
  'kube-scheduler',
  'kube-controller-manager',
  'kube-apiserver',
  'etcd',
];
const STARTUP_TIMEOUT_MS = 120_000;

// ---------------------------------------------------------------------------------------------
// build

async function runScript(script: string, args: string[], layout: ClusterLayout): Promise<void> {
  const env = { ...process.env, CLINICALSUITE_HOME: layout.home };
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn('bash', [script, ...args], { stdio: ['ignore', 2, 2], env });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`${script} failed (exit ${code ?? 'signal'}); see its output above`);
}

/**
 * Runs test/cluster/build.sh (a no-op when every binary is cached); its output goes to stderr.
 * With `node`, also the real node's binaries and its images (node-images.sh).
 */
export async function ensureBuilt(
  log: Log = () => undefined,
  layout = clusterLayout(),
  node = false,
): Promise<void> {
  const versions = readVersions();
  const missing = missingBinaries(layout, versions, node);
  if (missing.length > 0) {
    log(
      `building ${missing.length} missing part(s) of the test control plane (everything, cold: ~20-30 min on 2 cores)`,
    );
    await runScript(BUILD_SCRIPT, node ? ['--node'] : [], layout);
    const still = missingBinaries(layout, versions, node);
    if (still.length > 0) throw new Error(`build.sh finished but these are missing: ${still.join(', ')}`);
  }
  if (node) await runScript(NODE_IMAGES_SCRIPT, [nodeBinaries(layout, versions).pause], layout);
}

// ---------------------------------------------------------------------------------------------
// up

async function healthyState(
  layout: ClusterLayout,
  node: boolean,
): Promise<{ state: ClusterState; token: string; caPem: string } | undefined> {
  const state = await readState(layout);
  if (!state) return undefined;
  for (const component of COMPONENTS) {
    const rec = state.processes[component];
    if (!rec || !isOurProcess(rec.pid, ownedBy(layout, component))) return undefined;
  }
  // A real node asked for and not there, or there and not asked for: start afresh.
  if (node !== (state.node !== undefined)) return undefined;
  if (state.node) {
    for (const component of NODE_COMPONENTS) {
      const rec = state.node.processes[component];
      if (!rec || !isOurProcess(rec.pid, nodeProcessMatcher(layout, nodeProgram(component))))
        return undefined;
    }
  }
  try {
    const creds = await adminCredentials(layout);
    if (!(await readyz(adminEndpoint(state, creds.caPem, creds.token)))) return undefined;
    return { state, ...creds };
  } catch {
    return undefined;
  }
}

async function resetStateDirs(layout: ClusterLayout): Promise<void> {
  for (const dir of [layout.pkiDir, layout.configDir, layout.etcdDataDir, layout.runDir, layout.certDirs]) {
    await rm(dir, { recursive: true, force: true });
  }
  await rm(layout.stateFile, { force: true });
  await rm(layout.kubeconfig, { force: true });
}

async function startComponent(
  layout: ClusterLayout,
  state: ClusterState,
  component: Component,
  bin: string,
  args: string[],
): Promise<ProcessRecord> {
  const rec = await startDetached(
    bin,
    args,
    join(layout.logsDir, `${component}.log`),
    join(layout.runDir, `${component}.pid`),
  );
  state.processes[component] = rec;
  await writeState(layout, state);
  return rec;
}

/** Throws with the log's tail as soon as the component has exited. */
async function assertAlive(layout: ClusterLayout, component: Component, rec: ProcessRecord): Promise<void> {
  if (!isOurProcess(rec.pid, ownedBy(layout, component))) {
    throw new FatalError(
      `${component} exited during startup; last lines of ${rec.log}:\n${await tail(rec.log)}`,
    );
  }
}

/** Waits for `check` while the component lives; a failure carries the tail of its log. */
async function waitForComponent(
  layout: ClusterLayout,
  component: Component,
  rec: ProcessRecord,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = STARTUP_TIMEOUT_MS,
): Promise<void> {
  try {
    await waitFor(what, timeoutMs, async () => {
      await assertAlive(layout, component, rec);
      return check();
    });
  } catch (error) {
    if (error instanceof FatalError) throw error;
    throw new Error(`${(error as Error).message}\nlast lines of ${rec.log}:\n${await tail(rec.log)}`);
  }
}

async function startCluster(
  layout: ClusterLayout,
  bins: Binaries,
  versions: Versions,
  log: Log,
  node: boolean,
): Promise<ClusterInfo> {
  await resetStateDirs(layout);
  for (const dir of [layout.configDir, layout.etcdDataDir, layout.runDir, layout.certDirs, layout.logsDir]) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  }
  const [etcd, etcdPeer, apiserver, controllerManager, scheduler] = await freePorts(5);
  const ports: Ports = {
    etcd: etcd ?? 0,
    etcdPeer: etcdPeer ?? 0,
    apiserver: apiserver ?? 0,
    controllerManager: controllerManager ?? 0,
    scheduler: scheduler ?? 0,
  };
  const server = apiserverUrl(ports);
  const pki = await makePki(layout.pkiDir, SERVICE_IP, node ? [NODE_HOST_IP] : []);
  const kubeconfigs = {
    controllerManager: join(layout.configDir, 'kube-controller-manager.kubeconfig'),
    scheduler: join(layout.configDir, 'kube-scheduler.kubeconfig'),
    kwok: join(layout.configDir, 'kwok.kubeconfig'),
  };
  const component = (who: keyof typeof IDENTITIES): string =>
    renderKubeconfig({ server, user: IDENTITIES[who].user, token: pki.tokens[who], caFile: pki.caCert });
  await writeFile(kubeconfigs.controllerManager, component('kube-controller-manager'), { mode: 0o600 });
  await writeFile(kubeconfigs.scheduler, component('kube-scheduler'), { mode: 0o600 });
  await writeFile(kubeconfigs.kwok, component('kwok'), { mode: 0o600 });
  const adminKubeconfig = renderKubeconfig({
    server,
    user: IDENTITIES.admin.user,
    token: pki.tokens.admin,
    caPem: pki.caPem,
  });
  await writeFile(layout.kubeconfig, adminKubeconfig, { mode: 0o600 });

  const paths: ComponentPaths = { layout, bins, pki, kubeconfigs };
  const state: ClusterState = {
    startedAt: new Date().toISOString(),
    server,
    versions,
    ports,
    kubeconfig: layout.kubeconfig,
    processes: {},
  };
  const admin = adminEndpoint(state, pki.caPem, pki.tokens.admin);

  const etcdRec = await startComponent(layout, state, 'etcd', bins.etcd, etcdArgs(paths, ports));
  await waitForComponent(layout, 'etcd', etcdRec, 'etcd /health', async () => {
    const res = await fetch(`http://${HOST}:${ports.etcd}/health`);
    await res.text();
    return res.ok;
  });
  log(`etcd ${versions.etcd} on ${HOST}:${ports.etcd}`);

  const apiRec = await startComponent(
    layout,
    state,
    'kube-apiserver',
    bins['kube-apiserver'],
    apiserverArgs(paths, ports, node ? { hostIp: NODE_HOST_IP } : undefined),
  );
  await waitForComponent(layout, 'kube-apiserver', apiRec, 'kube-apiserver /readyz', () => readyz(admin));
  log(`kube-apiserver ${versions.kubernetes} on ${server}`);

  // Nodes before kwok starts, so that kwok's node-initialize stage finds their capacity in place.
  await applyFixtures(admin, node);

  const kcmRec = await startComponent(
    layout,
    state,
    'kube-controller-manager',
    bins['kube-controller-manager'],
    controllerManagerArgs(paths, ports),
  );
  const schedRec = await startComponent(
    layout,
    state,
    'kube-scheduler',
    bins['kube-scheduler'],
    schedulerArgs(paths, ports),
  );
  const kwokRec = await startComponent(layout, state, 'kwok', bins.kwok, kwokArgs(paths));
  const healthz = (port: number) => async (): Promise<boolean> =>
    (
      await call(
        { server: `https://${HOST}:${port}`, insecure: true },
        'GET',
        '/healthz',
        undefined,
        undefined,
        3_000,
      )
    ).status === 200;
  await waitForComponent(
    layout,
    'kube-controller-manager',
    kcmRec,
    'kube-controller-manager /healthz',
    healthz(ports.controllerManager),
  );
  await waitForComponent(
    layout,
    'kube-scheduler',
    schedRec,
    'kube-scheduler /healthz',
    healthz(ports.scheduler),
  );
  await assertAlive(layout, 'kwok', kwokRec);
  log(`kube-controller-manager, kube-scheduler and kwok ${versions.kwok} running`);

  try {
    await waitForWorkloadReadiness(admin, log, node);
  } catch (error) {
    // Nodes turn Ready through kwok, service accounts through the controller-manager.
    const logs = await Promise.all(
      [kwokRec, kcmRec].map(async (r) => `last lines of ${r.log}:\n${await tail(r.log)}`),
    );
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`);
  }
  if (node) {
    state.node = { ports: null, processes: {} };
    const nodeState = state.node;
    state.node = await startNode({
      layout,
      bins: nodeBinaries(layout, versions),
      pki,
      apiserverPort: ports.apiserver,
      admin,
      log,
      record: async (component, rec) => {
        nodeState.processes[component] = rec;
        await writeState(layout, state);
      },
    });
    await writeState(layout, state);
  }
  return {
    kubeconfig: layout.kubeconfig,
    server,
    token: pki.tokens.admin,
    caPem: pki.caPem,
    startedNow: true,
    state,
  };
}

/** Brings the cluster up (building what is missing first), or reuses the one already up. */
export async function up(options: UpOptions = {}): Promise<ClusterInfo> {
  const log = options.log ?? (() => undefined);
  const layout = options.layout ?? clusterLayout();
  const node = options.node ?? false;
  const versions = readVersions();
  const bins = binaries(layout, versions);
  if (options.build === false) {
    const missing = missingBinaries(layout, versions, node);
    if (missing.length > 0) throw new Error(`not built: ${missing.join(', ')} (run test/cluster/build.sh)`);
  } else {
    await ensureBuilt(log, layout, node);
  }

  return withLock(layout, async () => {
    const healthy = await healthyState(layout, node);
    if (healthy) {
      const endpoint = adminEndpoint(healthy.state, healthy.caPem, healthy.token);
      await applyFixtures(endpoint, node);
      await waitForWorkloadReadiness(endpoint, () => undefined, node);
      log(`already up at ${healthy.state.server}`);
      return { kubeconfig: layout.kubeconfig, server: healthy.state.server, ...healthy, startedNow: false };
    }
    if (existsSync(layout.stateFile) || (await findProcesses(ownedBy(layout))).length > 0) {
      log('found a cluster that is not the one asked for, or half-running; stopping it first');
      await stopAll(layout, log);
    }
    try {
      return await startCluster(layout, bins, versions, log, node);
    } catch (error) {
      await stopAll(layout, () => undefined);
      throw error;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// down

async function stopAll(layout: ClusterLayout, log: Log): Promise<string[]> {
  const state = await readState(layout);
  const stopped: string[] = [];
  // The real node first, while the API server still answers its kubelet's last calls. Only this
  // cluster's: its state names one, or its directory or processes are still there.
  if (state?.node || existsSync(nodeLayout(layout).dir) || (await nodeProcessesOf(layout)).length > 0) {
    stopped.push(...(await stopNode(layout, state?.node, log)));
  }
  for (const component of STOP_ORDER) {
    const pids = new Set<number>();
    const recorded =
      state?.processes[component]?.pid ?? (await readPid(join(layout.runDir, `${component}.pid`)));
    if (recorded !== undefined) pids.add(recorded);
    for (const pid of await findProcesses(ownedBy(layout, component))) pids.add(pid);
    for (const pid of pids) {
      if (await stopProcess(pid, ownedBy(layout, component))) {
        stopped.push(`${component} (pid ${pid})`);
        log(`stopped ${component} (pid ${pid})`);
      }
    }
  }
  await resetStateDirs(layout);
  return stopped;
}

/** Stops every process of the cluster and removes its state (binaries and logs stay). */
export async function down(options: { log?: Log; layout?: ClusterLayout } = {}): Promise<string[]> {
  const layout = options.layout ?? clusterLayout();
  return withLock(layout, () => stopAll(layout, options.log ?? (() => undefined)));
}

export { readState, type ClusterState, type Log, type ProcessRecord } from './state.js';
export { status, type ClusterStatus, type ComponentStatus } from './status.js';
