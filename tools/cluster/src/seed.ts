/**
 * What a fresh test cluster is given and waits for: the fixtures of `fixtures.ts` applied (storage
 * class, nvidia runtime class, fake nodes with their capacity), then nodes Ready and the default
 * service account made, so workloads can be admitted.
 */
import { apply, get, type Endpoint } from './api.js';
import {
  buildFakeNode,
  buildNvidiaRuntimeClass,
  buildStorageClass,
  FAKE_NODES,
  type FakeNodeSpec,
} from './fixtures.js';
import { waitFor, type Log, type NodeList } from './state.js';

/**
 * The fake nodes this cluster has: all four, or with a real node (`up --node`) only the GPU ones,
 * so that CPU pods land on the real node and GPU pods on kwok's.
 */
export function fakeNodes(node: boolean): readonly FakeNodeSpec[] {
  return node ? FAKE_NODES.filter((n) => n.gpus > 0) : FAKE_NODES;
}

export async function applyFixtures(endpoint: Endpoint, node = false): Promise<void> {
  // With a real node, claims go to its local-path class (node.ts) by default instead.
  await apply(endpoint, '/apis/storage.k8s.io/v1/storageclasses/kwok-volume', buildStorageClass(!node));
  await apply(endpoint, '/apis/node.k8s.io/v1/runtimeclasses/nvidia', buildNvidiaRuntimeClass());
  for (const spec of fakeNodes(node)) {
    const node = buildFakeNode(spec);
    const path = `/api/v1/nodes/${node.metadata.name}`;
    const { status, ...object } = node;
    await apply(endpoint, path, object);
    // Capacity lives in status, which an apply of the object itself ignores.
    await apply(endpoint, `${path}/status`, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: spec.name },
      status,
    });
  }
}

export async function waitForWorkloadReadiness(endpoint: Endpoint, log: Log, node = false): Promise<void> {
  const fake = fakeNodes(node).length;
  await waitFor(`${fake} Ready nodes (kwok)`, 60_000, async () => {
    const list = await get<NodeList>(endpoint, '/api/v1/nodes');
    const ready = (list?.items ?? []).filter((n) =>
      (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    return ready.length >= fake;
  });
  // Pods are refused until the controller-manager has made the namespace's default service account.
  await waitFor(
    'the default service account',
    60_000,
    async () =>
      (await get<object>(endpoint, '/api/v1/namespaces/default/serviceaccounts/default')) !== undefined,
  );
  log(`${fake} kwok nodes Ready`);
}
