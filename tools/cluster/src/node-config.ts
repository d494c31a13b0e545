/**
 * The real node's configuration files (`cluster up --node`): containerd, the CNI network, the
 * kubelet, kube-proxy, CoreDNS and the local-path provisioner. Pure: addresses, ports and paths in,
 * file contents out; `node.ts` writes and runs them. The node's layout and why it is built this way
 * are in test/cluster/README.md ("A real node").
 *
 * The node lives in its own network namespace, as a kind node lives in its container: a veth pair
 * joins it to the host (NODE_HOST_IP on the host's end, NODE_IP on the node's), the pod bridge, the
 * pods' veths and every iptables rule the kubelet, kube-proxy and the CNI plugins write stay inside
 * it, and deleting the namespace takes them all away.
 */
import { stringify } from 'yaml';

export const NODE_NAME = 'clinicalsuite-node';
/** The node's network namespace (`ip netns` name) and the host's end of its veth pair. */
export const NODE_NETNS = 'clinicalsuite-node';
export const NODE_HOST_LINK = 'cs-node-host';
export const NODE_LINK = 'cs-node-eth0';
/** The host's address on the link to the node: the API server, CoreDNS and test servers answer here. */
export const NODE_HOST_IP = '10.245.255.1';
/** The node's InternalIP: the kubelet listens here; pods' traffic leaves masqueraded as it. */
export const NODE_IP = '10.245.255.2';
export const NODE_LINK_CIDR = '10.245.255.0/30';
/** The node's pods (host-local IPAM on the bridge); the host routes it through NODE_IP. */
export const NODE_POD_CIDR = '10.245.0.0/24';
export const NODE_POD_GATEWAY = '10.245.0.1';
export const NODE_BRIDGE = 'cs-pods0';
/** The `kube-dns` Service's ClusterIP, answered by CoreDNS on NODE_HOST_IP. */
export const CLUSTER_DNS_IP = '10.96.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
/** The pod sandbox image, built from test/cluster/pause.c by test/cluster/node-images.sh. */
export const PAUSE_IMAGE = 'localhost/pause:3.10';
/** Where the local-path provisioner keeps volumes on the node, and the image of its helper pods. */
export const LOCAL_PATH_STORAGE_CLASS = 'local-path';
export const LOCAL_PATH_PROVISIONER = 'rancher.io/local-path';
export const HELPER_IMAGE = 'localhost/debian:bookworm-slim';

export interface NodePaths {
  /** containerd's root (images, snapshots) and state (sockets, shims' bundles). */
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  containerdConfig: string;
  cniConfDir: string;
  cniBinDir: string;
  kubeletRoot: string;
  kubeletConfig: string;
  kubeletPki: string;
  /** The resolv.conf pods with dnsPolicy Default get (CoreDNS on the host). */
  resolvConf: string;
  localPathDir: string;
}

export interface NodePorts {
  kubelet: number;
  kubeletHealthz: number;
  proxyHealthz: number;
  proxyMetrics: number;
  dnsHealth: number;
  dnsMetrics: number;
  routerHealthz: number;
}

/** TOML string: JSON's string escapes are TOML's basic-string escapes. */
const toml = (s: string): string => JSON.stringify(s);

/**
 * containerd 1.6's CRI plugin. `restrict_oom_score_adj`: the processes here may not lower their
 * OOM score (no CAP_SYS_RESOURCE on this machine), and the kubelet asks -998 for every sandbox;
 * restricted, containerd clamps to its own score instead of failing the sandbox.
 */
export function containerdConfig(p: NodePaths): string {
  return `version = 2
root = ${toml(p.containerdRoot)}
state = ${toml(p.containerdState)}

[grpc]
  address = ${toml(p.containerdSocket)}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${toml(PAUSE_IMAGE)}
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${toml(p.cniBinDir)}
    conf_dir = ${toml(p.cniConfDir)}
`;
}

/** A bridge with host-local addresses; traffic leaving the pod range is masqueraded as the node. */
export function cniConfig(): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'clinicalsuite',
      plugins: [
        {
          type: 'bridge',
          bridge: NODE_BRIDGE,
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: NODE_POD_CIDR, gateway: NODE_POD_GATEWAY }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
        { type: 'loopback' },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(p: NodePaths, ports: NodePorts, caFile: string): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This machine has cgroup v1 only; kubelet 1.35 refuses it unless told.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    address: NODE_IP,
    port: ports.kubelet,
    readOnlyPort: 0,
    // On the node's address: the node's loopback is not the host's.
    healthzBindAddress: NODE_IP,
    healthzPort: ports.kubeletHealthz,
    // The API server (exec, logs, port-forward) proves itself with a client certificate of the
    // cluster's CA; every request is authorised by the API server (SubjectAccessReview).
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: caFile },
    },
    authorization: { mode: 'Webhook' },
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: CLUSTER_DOMAIN,
    resolvConf: p.resolvConf,
    failSwapOn: false,
    serializeImagePulls: false,
    // Images are loaded by hand (no registry): never garbage-collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // A shared developer disk: evict only when it is really full.
    evictionHard: { 'memory.available': '256Mi', 'nodefs.available': '2%', 'imagefs.available': '2%' },
    // The node's whole CPU and memory are for its pods; nothing else is reserved on a test node.
    maxPods: 60,
    registerNode: true,
    rotateCertificates: false,
    serverTLSBootstrap: false,
  });
}

export function kubeProxyConfig(kubeconfig: string, ports: NodePorts): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig },
    hostnameOverride: NODE_NAME,
    bindAddress: NODE_IP,
    clusterCIDR: NODE_POD_CIDR,
    healthzBindAddress: `${NODE_IP}:${ports.proxyHealthz}`,
    metricsBindAddress: `${NODE_IP}:${ports.proxyMetrics}`,
    // Leave the kernel's conntrack table size alone (a namespaced sysctl kube-proxy cannot set here).
    conntrack: { maxPerCore: 0, min: 0 },
  });
}

/** CoreDNS for cluster.local from the API server; everything else from the host's resolvers. */
export function corefile(kubeconfig: string, ports: NodePorts): string {
  return `.:53 {
    bind ${NODE_HOST_IP}
    errors
    health 127.0.0.1:${ports.dnsHealth}
    ready
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        kubeconfig ${kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    prometheus 127.0.0.1:${ports.dnsMetrics}
    forward . /etc/resolv.conf
    cache 5
    loop
    reload
}
`;
}

/** The resolv.conf of pods that do not use the cluster's DNS (dnsPolicy Default). */
export function nodeResolvConf(): string {
  return `nameserver ${NODE_HOST_IP}\n`;
}

/** local-path-provisioner's ConfigMap: where volumes go, and the helper pods that make them. */
export function localPathConfigMap(namespace: string, localPathDir: string): object {
  const setup = `#!/bin/sh
set -eu
mkdir -m 0777 -p "$VOL_DIR"
`;
  const teardown = `#!/bin/sh
set -eu
rm -rf "$VOL_DIR"
`;
  const helperPod = stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'helper-pod' },
    spec: {
      priorityClassName: 'system-node-critical',
      tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [{ name: 'helper-pod', image: HELPER_IMAGE, imagePullPolicy: 'Never' }],
    },
  });
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'local-path-config', namespace },
    data: {
      'config.json': JSON.stringify({
        nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [localPathDir] }],
      }),
      setup,
      teardown,
      'helperPod.yaml': helperPod,
    },
  };
}

export function localPathStorageClass(): object {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: {
      name: LOCAL_PATH_STORAGE_CLASS,
      annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
    },
    provisioner: LOCAL_PATH_PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'WaitForFirstConsumer',
  };
}

/** The `kube-dns` Service pods resolve through, and the EndpointSlice that points it at CoreDNS. */
export function dnsService(): { service: object; slice: object } {
  const ports = [
    { name: 'dns', port: 53, protocol: 'UDP' },
    { name: 'dns-tcp', port: 53, protocol: 'TCP' },
  ];
  return {
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: { clusterIP: CLUSTER_DNS_IP, ports: ports.map((p) => ({ ...p, targetPort: 53 })) },
    },
    slice: {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kube-dns-host',
        namespace: 'kube-system',
        labels: {
          'kubernetes.io/service-name': 'kube-dns',
          'endpointslice.kubernetes.io/managed-by': 'clinicalsuite-test-cluster',
        },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [NODE_HOST_IP], conditions: { ready: true } }],
      ports,
    },
  };
}

/** The node's host processes and what each may do, as the users of their static tokens. */
export const NODE_RBAC_USERS = {
  coredns: 'system:clinicalsuite:coredns',
  'local-path-provisioner': 'system:clinicalsuite:local-path-provisioner',
  'kube-router': 'system:clinicalsuite:kube-router',
} as const;

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
const READ = ['get', 'list', 'watch'];

const NODE_RBAC_RULES: Record<keyof typeof NODE_RBAC_USERS, Rule[]> = {
  // As CoreDNS's own deployment manifest grants it.
  coredns: [
    { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
  ],
  // As local-path-provisioner's deploy manifest grants it (helper pods, volumes, claims).
  'local-path-provisioner': [
    { apiGroups: [''], resources: ['nodes', 'configmaps', 'pods/log'], verbs: READ },
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: [...READ, 'update'] },
    {
      apiGroups: [''],
      resources: ['persistentvolumes', 'pods'],
      verbs: [...READ, 'create', 'patch', 'update', 'delete'],
    },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: READ },
  ],
  // As kube-router's own manifests grant it, for its network policy controller.
  'kube-router': [
    { apiGroups: [''], resources: ['pods', 'namespaces', 'nodes', 'services', 'endpoints'], verbs: READ },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: READ },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: READ },
  ],
};

/** A ClusterRole and its binding to the component's user, for each node host process. */
export function nodeRbac(): { path: string; object: object }[] {
  const out: { path: string; object: object }[] = [];
  for (const [component, user] of Object.entries(NODE_RBAC_USERS)) {
    const name = `clinicalsuite:${component}`;
    out.push({
      path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${encodeURIComponent(name)}`,
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name },
        rules: NODE_RBAC_RULES[component as keyof typeof NODE_RBAC_USERS],
      },
    });
    out.push({
      path: `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${encodeURIComponent(name)}`,
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
  }
  return out;
}
