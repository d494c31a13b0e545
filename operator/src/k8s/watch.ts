/**
 * Informers that turn cluster changes into reconcile keys (`namespace/name` of a ClinicalSuite):
 * the suites themselves, and the objects they own (mapped to their owner through its controller
 * ownerReference or the instance label), so a deleted or hand-edited object is put back; and a
 * periodic resync of every suite. Level-triggered: what changed does not matter, only which suite
 * to look at again.
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  makeInformer,
  NetworkingV1Api,
  PolicyV1Api,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import {
  GROUP,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  PLURAL,
  VERSION,
} from '../api/v1alpha1/index.js';
import { controllingSuite } from '../resources/owner.js';

export interface Watcher {
  stop(): Promise<void>;
}

/** A watched kind of owned object: its API group (core: ""), resource and list path. */
export interface WatchedKind {
  readonly group: string;
  readonly resource: string;
  readonly path: string;
}

/**
 * The owned kinds watched (label `managed-by`), so a deleted or edited object wakes its suite:
 * what the operator creates (the auth Secret included) and the pods whose state status reports.
 * ServiceMonitors are not watched (their CRD may be missing); the periodic resync restores them.
 * The chart's ClusterRole grants list and watch on each (test/helm checks it).
 */
export const WATCHED_KINDS: readonly WatchedKind[] = [
  { group: 'apps', resource: 'deployments', path: '/apis/apps/v1/deployments' },
  { group: '', resource: 'pods', path: '/api/v1/pods' },
  { group: '', resource: 'persistentvolumeclaims', path: '/api/v1/persistentvolumeclaims' },
  { group: '', resource: 'services', path: '/api/v1/services' },
  { group: '', resource: 'configmaps', path: '/api/v1/configmaps' },
  { group: '', resource: 'secrets', path: '/api/v1/secrets' },
  { group: 'policy', resource: 'poddisruptionbudgets', path: '/apis/policy/v1/poddisruptionbudgets' },
  {
    group: 'networking.k8s.io',
    resource: 'networkpolicies',
    path: '/apis/networking.k8s.io/v1/networkpolicies',
  },
];

/** What `ownerKey` reads of a watched object. */
export interface EventObject {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly ownerReferences?: readonly {
      readonly apiVersion: string;
      readonly kind: string;
      readonly name: string;
      readonly controller?: boolean;
    }[];
  };
}

/**
 * The reconcile key of the suite that owns `obj`: its controller ownerReference to a ClinicalSuite,
 * else (a retained data claim has none; a pod's owner is a ReplicaSet) its instance label.
 */
export function ownerKey(obj: EventObject): string | undefined {
  const meta = obj.metadata;
  if (meta?.namespace === undefined) return undefined;
  const name = controllingSuite(meta) ?? meta.labels?.[LABEL_INSTANCE];
  return name === undefined ? undefined : `${meta.namespace}/${name}`;
}

export interface WatchOptions {
  /**
   * Every suite is enqueued again this often (0: never), so what no event reports (a change of an
   * unwatched ServiceMonitor, a lost watch event) is still put right; the reconciler re-applies
   * everything on such a pass (see Reconciler's resyncMs).
   */
  readonly resyncMs?: number;
}

export function watchSuites(
  kc: KubeConfig,
  enqueue: (key: string) => void,
  onError: (what: string, error: unknown) => void,
  options: WatchOptions = {},
): Watcher {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const owned = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
  const suiteKey = (obj: KubernetesObject) => {
    const ns = obj.metadata?.namespace;
    if (ns !== undefined && obj.metadata?.name !== undefined) enqueue(`${ns}/${obj.metadata.name}`);
  };
  const byOwner = (obj: KubernetesObject) => {
    const key = ownerKey(obj);
    if (key !== undefined) enqueue(key);
  };
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const policy = kc.makeApiClient(PolicyV1Api);
  const networking = kc.makeApiClient(NetworkingV1Api);
  const q = { labelSelector: owned };
  const lists: Record<string, () => Promise<KubernetesListObject<KubernetesObject>>> = {
    deployments: () => apps.listDeploymentForAllNamespaces(q),
    pods: () => core.listPodForAllNamespaces(q),
    persistentvolumeclaims: () => core.listPersistentVolumeClaimForAllNamespaces(q),
    services: () => core.listServiceForAllNamespaces(q),
    configmaps: () => core.listConfigMapForAllNamespaces(q),
    secrets: () => core.listSecretForAllNamespaces(q),
    poddisruptionbudgets: () => policy.listPodDisruptionBudgetForAllNamespaces(q),
    networkpolicies: () => networking.listNetworkPolicyForAllNamespaces(q),
  };
  const listOf = (resource: string) => {
    const list = lists[resource];
    if (list === undefined) throw new Error(`no list for ${resource}`);
    return list;
  };
  const specs: [
    string,
    string,
    () => Promise<KubernetesListObject<KubernetesObject>>,
    string | undefined,
    (o: KubernetesObject) => void,
  ][] = [
    [
      'clinicalsuites',
      `/apis/${GROUP}/${VERSION}/${PLURAL}`,
      async () =>
        (await custom.listClusterCustomObject({
          group: GROUP,
          version: VERSION,
          plural: PLURAL,
        })) as KubernetesListObject<KubernetesObject>,
      undefined,
      suiteKey,
    ],
    ...WATCHED_KINDS.map((k): (typeof specs)[number] => [
      k.resource,
      k.path,
      listOf(k.resource),
      owned,
      byOwner,
    ]),
  ];
  let stopped = false;
  const informers = specs.map(([what, path, list, selector, map]) => {
    const informer = makeInformer(kc, path, list, selector);
    for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, map);
    informer.on('error', (error: unknown) => {
      onError(what, error);
      // An informer stops on error; start it again (it re-lists, so nothing is missed).
      if (!stopped)
        setTimeout(() => void informer.start().catch((e: unknown) => onError(what, e)), 3000).unref();
    });
    return informer;
  });
  for (const [i, informer] of informers.entries()) {
    void informer.start().catch((e: unknown) => onError(specs[i]?.[0] ?? 'informer', e));
  }
  const suites = informers[0];
  const resyncMs = options.resyncMs ?? 0;
  const timer =
    resyncMs > 0 && suites !== undefined
      ? setInterval(() => {
          for (const suite of suites.list()) suiteKey(suite);
        }, resyncMs)
      : undefined;
  timer?.unref();
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearInterval(timer);
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
