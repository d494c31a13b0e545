/**
 * Command lines and kubeconfigs of the control-plane components. Pure: paths and ports in,
 * arguments out. The API server's flags follow controller-runtime envtest's defaults (RBAC,
 * service-account issuer and keys, privileged allowed), plus a static token file instead of client
 * certificates and, without a real node, `--endpoint-reconciler-type=none` since no pod runs;
 * unlike envtest the ServiceAccount admission plugin stays on, because the controller-manager here
 * creates the default service accounts.
 */
import { stringify } from 'yaml';
import type { Binaries, ClusterLayout } from './layout.js';
import type { Pki } from './pki.js';
import { join } from 'node:path';

export const HOST = '127.0.0.1';
export const SERVICE_CIDR = '10.96.0.0/16';
/** The first address of SERVICE_CIDR: the `kubernetes` service, in the serving certificate. */
export const SERVICE_IP = '10.96.0.1';
export const POD_CIDR = '10.244.0.1/16';
export const CLUSTER_NAME = 'clinicalsuite-test';

export interface Ports {
  etcd: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
}

export interface KubeconfigInput {
  server: string;
  user: string;
  token: string;
  /** Inline CA (self-contained file) or a path to it. */
  caPem?: string;
  caFile?: string;
}

export function renderKubeconfig(input: KubeconfigInput): string {
  const cluster: Record<string, string> = { server: input.server };
  if (input.caPem) cluster['certificate-authority-data'] = Buffer.from(input.caPem).toString('base64');
  if (input.caFile) cluster['certificate-authority'] = input.caFile;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: CLUSTER_NAME, cluster }],
    users: [{ name: input.user, user: { token: input.token } }],
    contexts: [{ name: CLUSTER_NAME, context: { cluster: CLUSTER_NAME, user: input.user } }],
    'current-context': CLUSTER_NAME,
    preferences: {},
  });
}

export interface ComponentPaths {
  layout: ClusterLayout;
  bins: Binaries;
  pki: Pick<
    Pki,
    | 'caCert'
    | 'caKey'
    | 'servingCert'
    | 'servingKey'
    | 'kubeletClientCert'
    | 'kubeletClientKey'
    | 'saPublicKey'
    | 'saPrivateKey'
    | 'tokenFile'
  >;
  /** Per-component kubeconfig files (written by cluster.ts). */
  kubeconfigs: { controllerManager: string; scheduler: string; kwok: string };
}

export function apiserverUrl(ports: Ports): string {
  return `https://${HOST}:${ports.apiserver}`;
}

export function etcdArgs(p: ComponentPaths, ports: Ports): string[] {
  const client = `http://${HOST}:${ports.etcd}`;
  const peer = `http://${HOST}:${ports.etcdPeer}`;
  return [
    '--name=clinicalsuite',
    `--data-dir=${p.layout.etcdDataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=clinicalsuite=${peer}`,
    '--initial-cluster-state=new',
    // A test cluster's data is thrown away: skip fsync, the slowest part of etcd on a shared disk.
    '--unsafe-no-fsync=true',
    '--quota-backend-bytes=4294967296',
    '--log-level=warn',
  ];
}

/**
 * With a real node (`node`: the host's address on the node's link), the API server also listens
 * there and advertises it as the `kubernetes` service's endpoint, so pods reach it through
 * kube-proxy; it calls the kubelet (exec, logs) with its client certificate. Without one it stays on
 * loopback, where no pod could reach it anyway.
 */
export function apiserverArgs(p: ComponentPaths, ports: Ports, node?: { hostIp: string }): string[] {
  const address = node
    ? [
        '--bind-address=0.0.0.0',
        `--advertise-address=${node.hostIp}`,
        '--endpoint-reconciler-type=lease',
        `--kubelet-client-certificate=${p.pki.kubeletClientCert}`,
        `--kubelet-client-key=${p.pki.kubeletClientKey}`,
        '--kubelet-preferred-address-types=InternalIP',
      ]
    : [`--bind-address=${HOST}`, `--advertise-address=${HOST}`, '--endpoint-reconciler-type=none'];
  return [
    `--etcd-servers=http://${HOST}:${ports.etcd}`,
    ...address,
    `--secure-port=${ports.apiserver}`,
    `--cert-dir=${join(p.layout.certDirs, 'kube-apiserver')}`,
    `--tls-cert-file=${p.pki.servingCert}`,
    `--tls-private-key-file=${p.pki.servingKey}`,
    `--client-ca-file=${p.pki.caCert}`,
    `--token-auth-file=${p.pki.tokenFile}`,
    '--anonymous-auth=true', // only /healthz, /readyz, /livez and discovery, as on any cluster
    `--service-account-issuer=${apiserverUrl(ports)}`,
    `--service-account-key-file=${p.pki.saPublicKey}`,
    `--service-account-signing-key-file=${p.pki.saPrivateKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    // Kubelets are authorised as real clusters authorise them: only their own node and its pods.
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--allow-privileged=true',
    // envtest turns this off too: flow control costs CPU and a test cluster has one tenant.
    '--enable-priority-and-fairness=false',
    '--profiling=false',
    '--v=1',
  ];
}

/** Flags shared by the controller-manager and the scheduler: own kubeconfig, loopback, no election. */
function delegatedServing(kubeconfig: string, port: number, certDir: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    `--bind-address=${HOST}`,
    `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
    '--leader-elect=false',
    '--v=1',
  ];
}

export function controllerManagerArgs(p: ComponentPaths, ports: Ports): string[] {
  return [
    ...delegatedServing(
      p.kubeconfigs.controllerManager,
      ports.controllerManager,
      join(p.layout.certDirs, 'kube-controller-manager'),
    ),
    `--cluster-name=${CLUSTER_NAME}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    // Each controller acts as its own service account, with the roles the API server bootstraps.
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${p.pki.saPrivateKey}`,
    `--root-ca-file=${p.pki.caCert}`,
    `--cluster-signing-cert-file=${p.pki.caCert}`,
    `--cluster-signing-key-file=${p.pki.caKey}`,
    '--controllers=*',
    // kwok's fake nodes miss heartbeats when the machine is busy; with the default 50 s grace the
    // node lifecycle controller then marks every node and pod not ready (flapping readiness).
    '--node-monitor-grace-period=10m',
  ];
}

export function schedulerArgs(p: ComponentPaths, ports: Ports): string[] {
  return delegatedServing(
    p.kubeconfigs.scheduler,
    ports.scheduler,
    join(p.layout.certDirs, 'kube-scheduler'),
  );
}

export function kwokArgs(p: ComponentPaths): string[] {
  return [
    `--kubeconfig=${p.kubeconfigs.kwok}`,
    `--config=${p.bins.kwokStages}`,
    // Only the fake nodes: a real node beside them (`up --node`) is its kubelet's.
    '--manage-all-nodes=false',
    '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
    `--cidr=${POD_CIDR}`,
    `--node-ip=${HOST}`,
  ];
}
