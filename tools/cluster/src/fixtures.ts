/**
 * What a fresh test cluster is given so that workloads can run on it: fake nodes managed by kwok
 * (two CPU-only, two with four NVIDIA L4 each, as the device plugin and GPU feature discovery
 * would advertise them), and a default StorageClass whose claims kwok's volume stages bind.
 * Pure builders; `cluster.ts` applies them.
 */

/** The class kwok's volume stages (pvc-provision, pv-bind …) act on; made the default here. */
export const STORAGE_CLASS = 'kwok-volume';
export const GPU_RESOURCE = 'nvidia.com/gpu';

export interface FakeNodeSpec {
  name: string;
  cpu: string;
  memory: string;
  gpus: number;
  gpuProduct?: string;
}

export const FAKE_NODES: readonly FakeNodeSpec[] = [
  { name: 'kwok-cpu-1', cpu: '8', memory: '32Gi', gpus: 0 },
  { name: 'kwok-cpu-2', cpu: '8', memory: '32Gi', gpus: 0 },
  { name: 'kwok-gpu-l4-1', cpu: '16', memory: '64Gi', gpus: 4, gpuProduct: 'NVIDIA-L4' },
  { name: 'kwok-gpu-l4-2', cpu: '16', memory: '64Gi', gpus: 4, gpuProduct: 'NVIDIA-L4' },
];

export interface NodeObject {
  apiVersion: 'v1';
  kind: 'Node';
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: { taints: { key: string; value?: string; effect: string }[] };
  status: { capacity: Record<string, string>; allocatable: Record<string, string> };
}

export function buildFakeNode(spec: FakeNodeSpec): NodeObject {
  const labels: Record<string, string> = {
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': spec.name,
    'kubernetes.io/os': 'linux',
    'node.kubernetes.io/instance-type': spec.gpus > 0 ? 'fake-gpu' : 'fake-cpu',
    type: 'kwok',
  };
  const resources: Record<string, string> = {
    cpu: spec.cpu,
    'ephemeral-storage': '100Gi',
    memory: spec.memory,
    pods: '110',
  };
  if (spec.gpus > 0) {
    // The labels NVIDIA's GPU feature discovery puts on a GPU node.
    labels['nvidia.com/gpu.present'] = 'true';
    labels['nvidia.com/gpu.count'] = String(spec.gpus);
    if (spec.gpuProduct) labels['nvidia.com/gpu.product'] = spec.gpuProduct;
    resources[GPU_RESOURCE] = String(spec.gpus);
  }
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: spec.name,
      labels,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
    },
    // GPU nodes carry the taint managed clusters put on them (GKE, AKS), so only pods that ask for
    // a GPU (and tolerate it) land there: CPU pods cannot crowd the GPU nodes out.
    spec: { taints: spec.gpus > 0 ? [{ key: GPU_RESOURCE, value: 'present', effect: 'NoSchedule' }] : [] },
    status: { capacity: { ...resources }, allocatable: { ...resources } },
  };
}

export function buildStorageClass(isDefault = true): object {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: {
      name: STORAGE_CLASS,
      annotations: { 'storageclass.kubernetes.io/is-default-class': String(isDefault) },
    },
    provisioner: 'kwok.x-k8s.io/volume',
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    allowVolumeExpansion: true,
  };
}

/** The RuntimeClass NVIDIA's GPU operator installs; GPU resource profiles name it. */
export function buildNvidiaRuntimeClass(): object {
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: 'nvidia' },
    handler: 'nvidia',
  };
}
