/**
 * The test cluster's real node (`npm run cluster -- up --node`): its processes (containerd with
 * runc, the kubelet, kube-proxy, CoreDNS, the local-path provisioner, kube-router's network policy
 * controller), started and stopped beside kwok's fake GPU nodes; node-host.ts has what it takes
 * from the machine. How it is laid out, and what runs for real: test/cluster/README.md ("A real
 * node").
 *
 * Isolation, so that `down` can leave nothing behind:
 * - a network namespace (NODE_NETNS) joined to the host by a veth pair: the pod bridge, the pods'
 *   veths and every iptables rule and ipset of the kubelet, kube-proxy, the CNI plugins and the
 *   network policies are inside it, and go when it is deleted;
 * - a private mount namespace, held open by a `pause` process, for containerd, the kubelet and
 *   everything they start: their overlay, tmpfs and namespace mounts live and die with it; /run in
 *   it is a fresh tmpfs (as in a container);
 * - the pods' cgroups (`kubepods` under each cgroup v1 controller) are emptied and removed.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { apply, get, type Endpoint } from './api.js';
import { renderKubeconfig } from './components.js';
import type { ClusterLayout, NodeBinaryPaths } from './layout.js';
import {
  CLUSTER_DNS_IP,
  cniConfig,
  containerdConfig,
  corefile,
  dnsService,
  kubeletConfig,
  kubeProxyConfig,
  localPathConfigMap,
  localPathStorageClass,
  LOCAL_PATH_PROVISIONER,
  HELPER_IMAGE,
  NODE_HOST_IP,
  NODE_IP,
  NODE_NAME,
  NODE_NETNS,
  NODE_POD_CIDR,
  nodeRbac,
  nodeResolvConf,
  PAUSE_IMAGE,
  type NodePaths,
  type NodePorts,
} from './node-config.js';
import { makeNetwork, nodeNamesInUse, podCgroups, removeNetwork, removePodCgroups, sh } from './node-host.js';
import { IDENTITIES, type Pki } from './pki.js';
import { findProcesses, isOurProcess, startDetached, stopProcess, tail, type Matcher } from './processes.js';
import { freePorts, waitFor, FatalError, type Log, type ProcessRecord } from './state.js';

export const NODE_COMPONENTS = [
  'node-namespace',
  'containerd',
  'kubelet',
  'kube-proxy',
  'coredns',
  'local-path-provisioner',
  'kube-router',
] as const;
export type NodeComponent = (typeof NODE_COMPONENTS)[number];

/** Stopped first to last: nothing restarts what was just stopped. */
const NODE_STOP_ORDER: readonly NodeComponent[] = [
  'kube-router',
  'local-path-provisioner',
  'kubelet',
  'kube-proxy',
  'coredns',
  'containerd',
  'node-namespace',
];

export interface NodeState {
  /** Null while the node is starting. */
  ports: NodePorts | null;
  processes: Partial<Record<NodeComponent, ProcessRecord>>;
}

export interface NodeLayout extends NodePaths {
  dir: string;
  configDir: string;
  imagesDir: string;
}

export function nodeLayout(layout: ClusterLayout): NodeLayout {
  const dir = join(layout.dir, 'node');
  return {
    dir,
    configDir: join(dir, 'config'),
    imagesDir: join(layout.dir, 'images'),
    containerdRoot: join(dir, 'containerd'),
    // Inside the node's own /run (a tmpfs of its mount namespace).
    containerdState: '/run/containerd',
    containerdSocket: join(dir, 'containerd.sock'),
    containerdConfig: join(dir, 'config', 'containerd.toml'),
    cniConfDir: join(dir, 'config', 'cni'),
    cniBinDir: '/usr/lib/cni',
    kubeletRoot: join(dir, 'kubelet'),
    kubeletConfig: join(dir, 'config', 'kubelet.yaml'),
    kubeletPki: join(dir, 'kubelet-pki'),
    resolvConf: join(dir, 'config', 'resolv.conf'),
    localPathDir: join(dir, 'local-path'),
  };
}

/** Debian's programs the node needs, with the package each comes from. */
const SYSTEM_PROGRAMS: readonly [string, string][] = [
  ['/usr/bin/containerd', 'containerd'],
  ['/usr/sbin/runc', 'runc'],
  ['/usr/lib/cni/bridge', 'containernetworking-plugins'],
  ['/usr/sbin/iptables', 'iptables'],
  ['/usr/sbin/conntrack', 'conntrack'],
  ['/usr/sbin/ipset', 'ipset'],
  ['/usr/bin/nsenter', 'util-linux'],
  ['/usr/bin/buildah', 'buildah'],
];

export function missingNodePrograms(): string[] {
  return SYSTEM_PROGRAMS.filter(([path]) => !existsSync(path)).map(([path, pkg]) => `${path} (${pkg})`);
}

/**
 * A process of this cluster's node: the program's file name, and one of this cluster's paths among
 * its arguments (the binary cache may be shared by several clusters, so its path alone is not).
 */
export function nodeProcessMatcher(layout: ClusterLayout, program: string): Matcher {
  return (argv) =>
    argv[0] !== undefined &&
    basename(argv[0]).startsWith(program) &&
    argv.slice(1).some((a) => a.includes(layout.dir));
}

/** The program a node component runs (the namespace holder is the pause binary). */
export function nodeProgram(component: NodeComponent): string {
  return component === 'node-namespace' ? 'pause' : component;
}

/** Every live process of this cluster's node, shims included. */
export async function nodeProcessesOf(layout: ClusterLayout): Promise<number[]> {
  const pids: number[] = [];
  for (const program of [...NODE_COMPONENTS.map(nodeProgram), 'containerd-shim']) {
    pids.push(...(await findProcesses(nodeProcessMatcher(layout, program))));
  }
  return pids;
}

/** `nsenter` into the node (its network namespace, and the held mount namespace) to run `bin`. */
function inNode(holderPid: number, bin: string, args: readonly string[]): [string, string[]] {
  return [
    'nsenter',
    [`--net=/run/netns/${NODE_NETNS}`, `--mount=/proc/${holderPid}/ns/mnt`, '--', bin, ...args],
  ];
}

export interface NodeStartInput {
  layout: ClusterLayout;
  bins: NodeBinaryPaths;
  pki: Pick<Pki, 'caCert' | 'caPem' | 'tokens'>;
  apiserverPort: number;
  /** Admin access, to apply the node's objects (RBAC, kube-dns, storage class). */
  admin: Endpoint;
  log: Log;
  /** Records a started process in the cluster's state (so `down` finds it even after a crash). */
  record: (component: NodeComponent, rec: ProcessRecord) => Promise<void>;
}

/** The node's objects in the API server: its host processes' roles, kube-dns, the storage class. */
async function applyNodeObjects(admin: Endpoint, nl: NodeLayout): Promise<void> {
  for (const { path, object } of nodeRbac()) await apply(admin, path, object);
  const { service, slice } = dnsService();
  await apply(admin, '/api/v1/namespaces/kube-system/services/kube-dns', service);
  await apply(admin, '/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/kube-dns-host', slice);
  await apply(
    admin,
    '/api/v1/namespaces/kube-system/configmaps/local-path-config',
    localPathConfigMap('kube-system', nl.localPathDir),
  );
  await apply(admin, '/api/v1/namespaces/kube-system/serviceaccounts/local-path-provisioner', {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'local-path-provisioner', namespace: 'kube-system' },
    automountServiceAccountToken: false,
  });
  await apply(admin, '/apis/storage.k8s.io/v1/storageclasses/local-path', localPathStorageClass());
}

/** Starts the node; returns its state. The caller stops everything if this throws. */
export async function startNode(input: NodeStartInput): Promise<NodeState> {
  const { layout, bins, pki, log } = input;
  const nl = nodeLayout(layout);
  const missing = missingNodePrograms();
  if (missing.length > 0) {
    throw new FatalError(
      `the real node needs Debian's ${missing.join(', ')}: apt-get install containerd runc ` +
        'containernetworking-plugins iptables conntrack ipset util-linux buildah',
    );
  }
  const inUse = nodeNamesInUse();
  if (inUse.length > 0) {
    throw new FatalError(
      `${inUse.join(' and ')} ${inUse.length > 1 ? 'are' : 'is'} in use: another real test node runs on this machine ` +
        '(one per machine); stop it with `npm run cluster -- down` in its CLINICALSUITE_HOME',
    );
  }
  await rm(nl.dir, { recursive: true, force: true });
  for (const dir of [nl.configDir, nl.cniConfDir, nl.localPathDir, nl.kubeletRoot]) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  }
  const [kubelet, kubeletHealthz, proxyHealthz, proxyMetrics, dnsHealth, dnsMetrics, routerHealthz] =
    await freePorts(7);
  const ports: NodePorts = {
    kubelet: kubelet ?? 0,
    kubeletHealthz: kubeletHealthz ?? 0,
    proxyHealthz: proxyHealthz ?? 0,
    proxyMetrics: proxyMetrics ?? 0,
    dnsHealth: dnsHealth ?? 0,
    dnsMetrics: dnsMetrics ?? 0,
    routerHealthz: routerHealthz ?? 0,
  };
  const state: NodeState = { ports, processes: {} };

  // Files.
  const hostServer = `https://${NODE_HOST_IP}:${input.apiserverPort}`;
  const loopbackServer = `https://127.0.0.1:${input.apiserverPort}`;
  const kubeconfig = (who: keyof typeof IDENTITIES, server: string): string =>
    renderKubeconfig({ server, user: IDENTITIES[who].user, token: pki.tokens[who], caFile: pki.caCert });
  const kc = (name: string): string => join(nl.configDir, `${name}.kubeconfig`);
  await writeFile(kc('kubelet'), kubeconfig('kubelet', hostServer), { mode: 0o600 });
  await writeFile(kc('kube-proxy'), kubeconfig('kube-proxy', hostServer), { mode: 0o600 });
  await writeFile(kc('coredns'), kubeconfig('coredns', loopbackServer), { mode: 0o600 });
  await writeFile(kc('local-path-provisioner'), kubeconfig('local-path-provisioner', loopbackServer), {
    mode: 0o600,
  });
  await writeFile(kc('kube-router'), kubeconfig('kube-router', hostServer), { mode: 0o600 });
  await writeFile(nl.containerdConfig, containerdConfig(nl));
  await writeFile(join(nl.cniConfDir, '10-clinicalsuite.conflist'), cniConfig());
  await writeFile(nl.kubeletConfig, kubeletConfig(nl, ports, pki.caCert));
  await writeFile(nl.resolvConf, nodeResolvConf());
  const proxyConfig = join(nl.configDir, 'kube-proxy.yaml');
  await writeFile(proxyConfig, kubeProxyConfig(kc('kube-proxy'), ports));
  const dnsConfig = join(nl.configDir, 'Corefile');
  await writeFile(dnsConfig, corefile(kc('coredns'), ports));
  const lppConfig = localPathConfigMap('kube-system', nl.localPathDir) as { data: Record<string, string> };
  const lppConfigFile = join(nl.configDir, 'local-path-config.json');
  const lppHelperFile = join(nl.configDir, 'local-path-helper-pod.yaml');
  await writeFile(lppConfigFile, lppConfig.data['config.json'] ?? '');
  await writeFile(lppHelperFile, lppConfig.data['helperPod.yaml'] ?? '');

  await makeNetwork();
  log(`network namespace ${NODE_NETNS}: node ${NODE_IP}, host ${NODE_HOST_IP}, pods ${NODE_POD_CIDR}`);

  const logFile = (c: NodeComponent): string => join(layout.logsDir, `${c}.log`);
  const pidFile = (c: NodeComponent): string => join(layout.runDir, `${c}.pid`);
  const start = async (c: NodeComponent, bin: string, args: string[]): Promise<ProcessRecord> => {
    const rec = await startDetached(bin, args, logFile(c), pidFile(c));
    state.processes[c] = rec;
    await input.record(c, rec);
    return rec;
  };
  // Started through nsenter (and env, unshare, sh), which exec the program: the pid is alive from
  // the start, and only later carries the program's own command line.
  const alive = (_c: NodeComponent, rec: ProcessRecord): boolean => isOurProcess(rec.pid, () => true);
  const waitUp = async (
    c: NodeComponent,
    rec: ProcessRecord,
    what: string,
    check: () => Promise<boolean>,
  ) => {
    try {
      await waitFor(what, 120_000, async () => {
        if (!alive(c, rec))
          throw new FatalError(
            `${c} exited during startup; last lines of ${rec.log}:\n${await tail(rec.log)}`,
          );
        return check();
      });
    } catch (error) {
      if (error instanceof FatalError) throw error;
      throw new Error(`${(error as Error).message}\nlast lines of ${rec.log}:\n${await tail(rec.log)}`);
    }
  };

  // The mount namespace's holder: a private copy of the host's mounts with its own /run, so
  // containerd's and the CNI plugins' namespace files and the iptables and ipset locks are the
  // node's.
  const setup = ['mount -t tmpfs -o mode=0755 node-run /run', 'mkdir -p /run/netns', 'exec "$1" "$2"'].join(
    ' && ',
  );
  const holder = await start('node-namespace', 'nsenter', [
    `--net=/run/netns/${NODE_NETNS}`,
    '--',
    'unshare',
    '--mount',
    '--propagation',
    'private',
    '--',
    'sh',
    '-c',
    setup,
    'node-namespace',
    bins.pause,
    layout.dir,
  ]);
  // Alive as nsenter, unshare and sh first; ours once the setup has run and pause took over.
  await waitFor('the node namespace holder', 30_000, () => {
    if (!existsSync(`/proc/${holder.pid}`)) {
      return tail(holder.log).then((t) => {
        throw new FatalError(
          `the node's mount namespace could not be set up; last lines of ${holder.log}:\n${t}`,
        );
      });
    }
    return Promise.resolve(isOurProcess(holder.pid, nodeProcessMatcher(layout, 'pause')));
  });
  const node = (bin: string, args: string[]): [string, string[]] => inNode(holder.pid, bin, args);

  const containerd = await start(
    'containerd',
    ...node('/usr/bin/containerd', ['--config', nl.containerdConfig]),
  );
  await waitUp('containerd', containerd, 'containerd', async () => {
    try {
      await sh('ctr', ['--address', nl.containerdSocket, 'version']);
      return true;
    } catch {
      return false;
    }
  });
  await loadImages(layout, NODE_IMAGES, log);
  log('containerd running, node images imported');

  await applyNodeObjects(input.admin, nl);

  const coredns = await start('coredns', bins.coredns, [
    '-conf',
    dnsConfig,
    '-pidfile',
    join(nl.dir, 'coredns.pid'),
  ]);
  const kubeletRec = await start(
    'kubelet',
    ...node(bins.kubelet, [
      `--config=${nl.kubeletConfig}`,
      `--kubeconfig=${kc('kubelet')}`,
      `--root-dir=${nl.kubeletRoot}`,
      `--cert-dir=${nl.kubeletPki}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      '--v=1',
    ]),
  );
  const proxy = await start('kube-proxy', ...node(bins['kube-proxy'], [`--config=${proxyConfig}`, '--v=1']));
  const lpp = await start('local-path-provisioner', bins['local-path-provisioner'], [
    '--debug',
    'start',
    `--kubeconfig=${kc('local-path-provisioner')}`,
    `--config=${lppConfigFile}`,
    `--helper-pod-file=${lppHelperFile}`,
    `--provisioner-name=${LOCAL_PATH_PROVISIONER}`,
    '--namespace=kube-system',
    '--configmap-name=local-path-config',
    '--service-account-name=local-path-provisioner',
    `--helper-image=${HELPER_IMAGE}`,
  ]);
  const healthz =
    (port: number, path = '/healthz', host = NODE_IP) =>
    async (): Promise<boolean> => {
      try {
        const res = await fetch(`http://${host}:${port}${path}`);
        await res.text();
        return res.ok;
      } catch {
        return false;
      }
    };
  await waitUp('coredns', coredns, 'CoreDNS /health', healthz(ports.dnsHealth, '/health', '127.0.0.1'));
  await waitUp('kubelet', kubeletRec, 'kubelet /healthz', healthz(ports.kubeletHealthz));
  await waitUp('kube-proxy', proxy, 'kube-proxy /healthz', healthz(ports.proxyHealthz));
  await waitUp('kubelet', kubeletRec, `node ${NODE_NAME} Ready`, async () => {
    const n = await get<{ status?: { conditions?: { type: string; status: string }[] } }>(
      input.admin,
      `/api/v1/nodes/${NODE_NAME}`,
    );
    return (n?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  });
  // kube-router's network policy controller alone (routes and Services are the bridge's and
  // kube-proxy's): iptables and ipsets in the node's namespace. It needs its Node to exist.
  const router = await start(
    'kube-router',
    ...node(bins['kube-router'], [
      `--kubeconfig=${kc('kube-router')}`,
      `--hostname-override=${NODE_NAME}`,
      '--run-firewall=true',
      '--run-router=false',
      '--run-service-proxy=false',
      '--metrics-port=0',
      `--health-port=${ports.routerHealthz}`,
      '--v=1',
    ]),
  );
  await waitUp('kube-router', router, 'kube-router /healthz', healthz(ports.routerHealthz));
  for (const [c, rec] of [['local-path-provisioner', lpp]] as const) {
    if (!alive(c, rec))
      throw new FatalError(`${c} exited during startup; last lines of ${rec.log}:\n${await tail(rec.log)}`);
  }
  log(
    `node ${NODE_NAME} Ready (kubelet, kube-proxy, kube-router, CoreDNS on ${NODE_HOST_IP}:53 as ${CLUSTER_DNS_IP})`,
  );
  return state;
}

/** Images the node runs without a registry: the pause image and the local-path helper's base. */
export const NODE_IMAGES = [PAUSE_IMAGE, HELPER_IMAGE] as const;

/**
 * Loads images from buildah's store into the node's containerd (`buildah push` to a
 * docker-archive, `ctr images import`). Used for the node's own images and for the suite's.
 */
export async function loadImages(layout: ClusterLayout, images: readonly string[], log: Log): Promise<void> {
  const nl = nodeLayout(layout);
  await mkdir(nl.imagesDir, { recursive: true });
  for (const image of images) {
    const archive = join(nl.imagesDir, `${image.replace(/[^A-Za-z0-9._-]/g, '_')}.tar`);
    const started = Date.now();
    await rm(archive, { force: true });
    await sh('buildah', ['push', '--quiet', image, `docker-archive:${archive}:${image}`]);
    await sh('ctr', ['--address', nl.containerdSocket, '--namespace', 'k8s.io', 'images', 'import', archive]);
    await rm(archive, { force: true });
    log(`image ${image} loaded into the node (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  }
}

/** Stops the node's processes and removes its pods, cgroups, mounts and network. */
export async function stopNode(
  layout: ClusterLayout,
  state: NodeState | undefined,
  log: Log,
): Promise<string[]> {
  const stopped: string[] = [];
  const nl = nodeLayout(layout);
  for (const component of NODE_STOP_ORDER) {
    const matcher = nodeProcessMatcher(layout, nodeProgram(component));
    const pids = new Set<number>(await findProcesses(matcher));
    const recorded = state?.processes[component]?.pid;
    if (recorded !== undefined) pids.add(recorded);
    if (component === 'containerd') {
      // The pods' processes first (the kubelet is gone: nothing restarts them), then containerd
      // and its shims.
      await removePodCgroups(log);
    }
    for (const pid of pids) {
      if (await stopProcess(pid, matcher, component === 'kubelet' ? 5_000 : 10_000)) {
        stopped.push(`${component} (pid ${pid})`);
        log(`stopped ${component} (pid ${pid})`);
      }
    }
    if (component === 'containerd') {
      const shims = nodeProcessMatcher(layout, 'containerd-shim');
      for (const pid of await findProcesses(shims)) await stopProcess(pid, shims, 2_000);
    }
  }
  await removePodCgroups(log);
  await removeNetwork(log);
  await rm(nl.dir, { recursive: true, force: true });
  return stopped;
}

/** Checks that nothing of the node is left on the machine; returns what is. */
export async function nodeLeftovers(layout: ClusterLayout): Promise<string[]> {
  const left: string[] = [];
  for (const pid of await nodeProcessesOf(layout)) left.push(`process pid ${pid}`);
  left.push(...nodeNamesInUse());
  for (const dir of await podCgroups()) left.push(`cgroup ${dir}`);
  const mounts = await readFile('/proc/self/mountinfo', 'utf8');
  for (const line of mounts.split('\n'))
    if (line.includes(layout.dir)) left.push(`mount ${line.split(' ')[4]}`);
  const routes = await sh('ip', ['route', 'show']);
  for (const line of routes.split('\n')) if (line.includes(NODE_IP)) left.push(`route ${line.trim()}`);
  return left;
}
