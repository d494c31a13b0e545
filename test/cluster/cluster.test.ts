/**
 * The test control plane itself (`npm run cluster -- up`): a real etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler, with kwok playing the kubelets of two CPU and two GPU
 * nodes. Asserts what the operator's integration tests rely on: GPUs are scheduled for real, pods
 * become Ready, an impossible GPU request stays Pending with the scheduler's reason, PVCs bind.
 *
 * Reuses a cluster that is already up (and leaves it up); otherwise starts one, which jest's
 * globalTeardown stops at the end of the run (CLUSTER_KEEP=1 keeps it). The first run on a machine builds the binaries from the Go module
 * proxy (~20 min on 2 cores, cached in $CLINICALSUITE_HOME/cluster/bin); later runs take ~15 s.
 * CLUSTER_TESTS=skip skips these tests, but only while the binaries are not built.
 */
// client-node's V1* models are generated data classes with no behaviour (only static type maps);
// its own examples pass object literals for them, as these tests do.
/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  VersionApi,
  type V1Pod,
  type V1PodCondition,
} from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { up, type ClusterInfo } from '../../tools/cluster/src/cluster.js';
import { FAKE_NODES, GPU_RESOURCE, STORAGE_CLASS } from '../../tools/cluster/src/fixtures.js';
import { missingBinaries, readVersions } from '../../tools/cluster/src/layout.js';

const missing = missingBinaries();
const skip = missing.length > 0 && process.env['CLUSTER_TESTS'] === 'skip';
if (skip) {
  process.stderr.write(
    `SKIPPED test/cluster: the control-plane binaries are not built (${missing.length} missing) and ` +
      `CLUSTER_TESTS=skip is set. Build them with test/cluster/build.sh (~20 min), or unset CLUSTER_TESTS.\n`,
  );
}
// Building from source is slow the first time; a cached cluster comes up in well under a minute.
const SETUP_TIMEOUT_MS = missing.length > 0 ? 90 * 60_000 : 3 * 60_000;
const WAIT_MS = 60_000;

const GPU_NODES = FAKE_NODES.filter((n) => n.gpus > 0).map((n) => n.name);
const CPU_NODES = FAKE_NODES.filter((n) => n.gpus === 0).map((n) => n.name);

/** Polls `probe` until it returns a value (not undefined), or fails with the last thing it saw. */
async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    await sleep(250);
  }
}

const condition = (pod: V1Pod, type: string): V1PodCondition | undefined =>
  pod.status?.conditions?.find((c) => c.type === type);

(skip ? describe.skip : describe)(
  'test control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)',
  () => {
    let info: ClusterInfo | undefined;
    let core: CoreV1Api;
    let apps: AppsV1Api;
    let kc: KubeConfig;
    const namespace = `cluster-test-${Date.now().toString(36)}`;

    beforeAll(async () => {
      info = await up({ log: (line) => process.stderr.write(`cluster: ${line}\n`) });
      kc = new KubeConfig();
      kc.loadFromFile(info.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      apps = kc.makeApiClient(AppsV1Api);
      await core.createNamespace({ body: { metadata: { name: namespace } } });
      // Pods are admitted only once the controller-manager has given the namespace its service account.
      await eventually('the namespace default service account', async () =>
        core.readNamespacedServiceAccount({ name: 'default', namespace }),
      );
    }, SETUP_TIMEOUT_MS);

    afterAll(async () => {
      if (!info) return;
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
      // The cluster is shared with the other files under test/cluster: globalTeardown stops it.
    }, 60_000);

    it('serves the pinned Kubernetes version over TLS with the admin token from the kubeconfig', async () => {
      const version = await kc.makeApiClient(VersionApi).getCode();
      expect(version.gitVersion).toBe(readVersions().kubernetes);
      expect(kc.getCurrentCluster()?.server).toBe(info!.server);
      expect(info!.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    });

    it('has two CPU and two GPU nodes, Ready, the GPU ones advertising 4 nvidia.com/gpu each', async () => {
      const nodes = (await core.listNode()).items;
      const byName = new Map(nodes.map((n) => [n.metadata?.name, n]));
      for (const name of [...CPU_NODES, ...GPU_NODES]) {
        const node = byName.get(name);
        expect(node).toBeDefined();
        expect(node?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
        expect(node?.metadata?.annotations?.['kwok.x-k8s.io/node']).toBe('fake');
      }
      for (const name of GPU_NODES) {
        const node = byName.get(name)!;
        expect(node.status?.allocatable?.[GPU_RESOURCE]).toBe('4');
        expect(node.status?.capacity?.[GPU_RESOURCE]).toBe('4');
        expect(node.metadata?.labels?.['nvidia.com/gpu.product']).toBe('NVIDIA-L4');
        expect(node.spec?.taints).toEqual([{ key: GPU_RESOURCE, value: 'present', effect: 'NoSchedule' }]);
      }
      for (const name of CPU_NODES) {
        expect(byName.get(name)!.status?.allocatable?.[GPU_RESOURCE]).toBeUndefined();
      }
    });

    it('schedules a Deployment asking for one GPU onto a GPU node, and its pod becomes Ready', async () => {
      const labels = { app: 'gpu-worker' };
      await apps.createNamespacedDeployment({
        namespace,
        body: {
          metadata: { name: 'gpu-worker' },
          spec: {
            replicas: 1,
            selector: { matchLabels: labels },
            template: {
              metadata: { labels },
              spec: {
                tolerations: [{ key: GPU_RESOURCE, operator: 'Exists', effect: 'NoSchedule' }],
                containers: [
                  {
                    name: 'worker',
                    image: 'registry.invalid/clinicalsuite/llm:test',
                    resources: { limits: { [GPU_RESOURCE]: '1', cpu: '1', memory: '1Gi' } },
                    readinessProbe: { httpGet: { path: '/health', port: 8080 } },
                  },
                ],
              },
            },
          },
        },
      });
      const pod = await eventually('a Ready gpu-worker pod', async () => {
        const pods = (await core.listNamespacedPod({ namespace, labelSelector: 'app=gpu-worker' })).items;
        return pods.find((p) => condition(p, 'Ready')?.status === 'True');
      });
      expect(GPU_NODES).toContain(pod.spec?.nodeName);
      expect(pod.status?.phase).toBe('Running');
      const deployment = await eventually('the Deployment to report 1 ready replica', async () => {
        const d = await apps.readNamespacedDeployment({ name: 'gpu-worker', namespace });
        return d.status?.readyReplicas === 1 ? d : undefined;
      });
      expect(deployment.status?.availableReplicas).toBe(1);
    });

    it('leaves a pod asking for 99 GPUs Pending, with the scheduler saying Insufficient nvidia.com/gpu', async () => {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'too-many-gpus' },
          spec: {
            tolerations: [{ key: GPU_RESOURCE, operator: 'Exists', effect: 'NoSchedule' }],
            containers: [
              {
                name: 'worker',
                image: 'registry.invalid/clinicalsuite/llm:test',
                resources: { limits: { [GPU_RESOURCE]: '99' } },
              },
            ],
          },
        },
      });
      const scheduled = await eventually('the scheduler to give up on too-many-gpus', async () => {
        const pod = await core.readNamespacedPod({ name: 'too-many-gpus', namespace });
        const c = condition(pod, 'PodScheduled');
        return c?.status === 'False' && c.reason === 'Unschedulable' ? c : undefined;
      });
      expect(scheduled.message).toContain(`Insufficient ${GPU_RESOURCE}`);
      const pod = await core.readNamespacedPod({ name: 'too-many-gpus', namespace });
      expect(pod.status?.phase).toBe('Pending');
      expect(pod.spec?.nodeName).toBeUndefined();
    });

    it('binds a PVC of the default StorageClass, and a pod mounting it becomes Ready', async () => {
      await core.createNamespacedPersistentVolumeClaim({
        namespace,
        body: {
          metadata: { name: 'models' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
        },
      });
      const claim = await eventually('the PVC to bind', async () => {
        const pvc = await core.readNamespacedPersistentVolumeClaim({ name: 'models', namespace });
        return pvc.status?.phase === 'Bound' ? pvc : undefined;
      });
      expect(claim.spec?.storageClassName).toBe(STORAGE_CLASS);
      const volume = await core.readPersistentVolume({ name: claim.spec!.volumeName! });
      expect(volume.spec?.claimRef?.name).toBe('models');
      expect(volume.spec?.capacity?.['storage']).toBe('10Gi');

      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'with-volume' },
          spec: {
            containers: [
              {
                name: 'worker',
                image: 'registry.invalid/clinicalsuite/llm:test',
                volumeMounts: [{ name: 'models', mountPath: '/models' }],
              },
            ],
            volumes: [{ name: 'models', persistentVolumeClaim: { claimName: 'models' } }],
          },
        },
      });
      const pod = await eventually('with-volume to become Ready', async () => {
        const p = await core.readNamespacedPod({ name: 'with-volume', namespace });
        return condition(p, 'Ready')?.status === 'True' ? p : undefined;
      });
      expect(pod.spec?.nodeName).toBeDefined();
    });
  },
);
