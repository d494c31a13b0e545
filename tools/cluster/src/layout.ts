/**
 * Where the test control plane lives on disk, and which pinned binaries it runs.
 *
 *   $CLINICALSUITE_HOME/cluster/            (default ~/.cache/clinicalsuite/cluster)
 *     bin/<component>-<version>             built by test/cluster/build.sh; kept by `down`
 *     kubeconfig                            admin kubeconfig (token + CA), printed by `up`
 *     state.json                            ports, pids and versions of the running cluster
 *     pki/ config/ etcd/ run/ cert-dirs/    per-cluster state; removed by `down`
 *     logs/<component>.log                  kept by `down` for post-mortems; truncated by `up`
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, from tools/cluster/src (jest) and tools/cluster/dist (CLI) alike. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const BUILD_SCRIPT = join(REPO_ROOT, 'test', 'cluster', 'build.sh');
export const VERSIONS_FILE = join(REPO_ROOT, 'test', 'cluster', 'versions.env');
export const PAUSE_SOURCE = join(REPO_ROOT, 'test', 'cluster', 'pause.c');
export const NODE_IMAGES_SCRIPT = join(REPO_ROOT, 'test', 'cluster', 'node-images.sh');

export const COMPONENTS = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
] as const;
export type Component = (typeof COMPONENTS)[number];

export interface Versions {
  kubernetes: string;
  etcd: string;
  kwok: string;
  helm: string;
  coredns: string;
  localPathProvisioner: string;
  kubeRouter: string;
  prometheus: string;
  /** The first 12 hex digits of pause.c's sha256, as build.sh names the binary. */
  pause: string;
}

export interface Binaries {
  etcd: string;
  'kube-apiserver': string;
  'kube-controller-manager': string;
  'kube-scheduler': string;
  kwok: string;
  kubectl: string;
  helm: string;
  /** Not a binary: kwok's default stages, extracted from the pinned kwok module by build.sh. */
  kwokStages: string;
}

/** The real node's binaries (`up --node`). */
export interface NodeBinaryPaths {
  kubelet: string;
  'kube-proxy': string;
  coredns: string;
  'local-path-provisioner': string;
  'kube-router': string;
  pause: string;
}

export interface ClusterLayout {
  home: string;
  dir: string;
  binDir: string;
  kubeconfig: string;
  stateFile: string;
  lockDir: string;
  pkiDir: string;
  configDir: string;
  etcdDataDir: string;
  runDir: string;
  logsDir: string;
  certDirs: string;
}

export function clusterLayout(env: NodeJS.ProcessEnv = process.env): ClusterLayout {
  const home = env['CLINICALSUITE_HOME'] || join(homedir(), '.cache', 'clinicalsuite');
  const dir = join(home, 'cluster');
  return {
    home,
    dir,
    binDir: join(dir, 'bin'),
    kubeconfig: join(dir, 'kubeconfig'),
    stateFile: join(dir, 'state.json'),
    lockDir: join(dir, '.lock'),
    pkiDir: join(dir, 'pki'),
    configDir: join(dir, 'config'),
    etcdDataDir: join(dir, 'etcd'),
    runDir: join(dir, 'run'),
    logsDir: join(dir, 'logs'),
    certDirs: join(dir, 'cert-dirs'),
  };
}

/** Parses versions.env (KEY=VALUE lines, # comments), the one place versions are pinned. */
export function parseVersions(text: string, pauseVersion = 'unknown'): Versions {
  const values = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq > 0) values.set(line.slice(0, eq), line.slice(eq + 1).replace(/^["']|["']$/g, ''));
  }
  const get = (key: string): string => {
    const value = values.get(key);
    if (!value) throw new Error(`${VERSIONS_FILE} does not pin ${key}`);
    return value;
  };
  return {
    kubernetes: get('KUBERNETES_VERSION'),
    etcd: get('ETCD_VERSION'),
    kwok: get('KWOK_VERSION'),
    helm: get('HELM_VERSION'),
    coredns: get('COREDNS_VERSION'),
    localPathProvisioner: get('LOCAL_PATH_PROVISIONER_VERSION'),
    kubeRouter: get('KUBE_ROUTER_VERSION'),
    prometheus: get('PROMETHEUS_VERSION'),
    pause: pauseVersion,
  };
}

export function readVersions(): Versions {
  const pause = createHash('sha256').update(readFileSync(PAUSE_SOURCE)).digest('hex').slice(0, 12);
  return parseVersions(readFileSync(VERSIONS_FILE, 'utf8'), pause);
}

export function binaries(layout: ClusterLayout, v: Versions): Binaries {
  const bin = (name: string, version: string): string => join(layout.binDir, `${name}-${version}`);
  return {
    etcd: bin('etcd', v.etcd),
    'kube-apiserver': bin('kube-apiserver', v.kubernetes),
    'kube-controller-manager': bin('kube-controller-manager', v.kubernetes),
    'kube-scheduler': bin('kube-scheduler', v.kubernetes),
    kubectl: bin('kubectl', v.kubernetes),
    kwok: bin('kwok', v.kwok),
    helm: bin('helm', v.helm),
    kwokStages: join(layout.binDir, `kwok-stages-${v.kwok}.yaml`),
  };
}

export function nodeBinaries(layout: ClusterLayout, v: Versions): NodeBinaryPaths {
  const bin = (name: string, version: string): string => join(layout.binDir, `${name}-${version}`);
  return {
    kubelet: bin('kubelet', v.kubernetes),
    'kube-proxy': bin('kube-proxy', v.kubernetes),
    coredns: bin('coredns', v.coredns),
    'local-path-provisioner': bin('local-path-provisioner', v.localPathProvisioner),
    'kube-router': bin('kube-router', v.kubeRouter),
    pause: bin('pause', v.pause),
  };
}

/** The cached files that are not there yet (empty when `build.sh` has nothing to do). */
export function missingBinaries(
  layout: ClusterLayout = clusterLayout(),
  v: Versions = readVersions(),
  node = false,
): string[] {
  const files = Object.values<string>({ ...binaries(layout, v), ...(node ? nodeBinaries(layout, v) : {}) });
  return files.filter((file) => !existsSync(file));
}
