/**
 * Informers that turn cluster changes into reconcile keys (`namespace/name` of a ClinicalSuite):
 * the suites themselves, and the objects they own (mapped to their owner through its controller
 * ownerReference or the instance label), so a deleted or hand-edited object is put back; and a
 * periodic resync of every suite. Level-triggered: what changed does not matter, only which suite
 * to look at again. Across the cluster, or in the namespaces the operator is given (WATCH_NAMESPACES,
 * which the Helm chart sets to those it grants a Role in): it lists nothing elsewhere.
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

/** A watched kind of owned object: its API group (core: ""), resource and API version. */
export interface WatchedKind {
  readonly group: string;
  readonly resource: string;
  /** `v1`, `apps/v1` …: the list path's prefix. */
  readonly apiVersion: string;
}

/**
 * The owned kinds watched (label `managed-by`), so a deleted or edited object wakes its suite:
 * what the operator creates and the pods whose state status reports. Not Secrets: listing or
 * watching them would let the operator read every Secret of a watched namespace, and it needs only
 * the ones it makes (a deleted auth or env Secret is made again on the suite's next reconcile, at
 * the latest the periodic resync). ServiceMonitors are not watched (their CRD may be missing); the
 * resync restores them. The chart's Role grants list and watch on each (test/helm checks it).
 */
export const WATCHED_KINDS: readonly WatchedKind[] = [
  { group: 'apps', resource: 'deployments', apiVersion: 'apps/v1' },
  { group: '', resource: 'pods', apiVersion: 'v1' },
  { group: '', resource: 'persistentvolumeclaims', apiVersion: 'v1' },
  { group: '', resource: 'services', apiVersion: 'v1' },
  { group: '', resource: 'configmaps', apiVersion: 'v1' },
  { group: 'policy', resource: 'poddisruptionbudgets', apiVersion: 'policy/v1' },
  { group: 'networking.k8s.io', resource: 'networkpolicies', apiVersion: 'networking.k8s.io/v1' },
];

/** Every namespace (one informer per kind for the whole cluster), or these namespaces only. */
export type WatchScope =
  { readonly all: true } | { readonly all: false; readonly namespaces: readonly string[] };

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The scope of a `WATCH_NAMESPACES` value: `*` for every namespace, else a comma-separated list of
 * namespace names (spaces ignored, duplicates dropped). Throws on an empty list, a bad name or `*`
 * among names.
 */
export function parseWatchNamespaces(value: string): WatchScope {
  const names = [
    ...new Set(
      value
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== ''),
    ),
  ];
  if (names.length === 1 && names[0] === '*') return { all: true };
  if (names.length === 0) throw new Error('WATCH_NAMESPACES: give "*" or at least one namespace');
  for (const name of names) {
    if (name === '*')
      throw new Error('WATCH_NAMESPACES: "*" (every namespace) cannot be combined with names');
    if (name.length > 63 || !NAMESPACE.test(name))
      throw new Error(`WATCH_NAMESPACES: ${JSON.stringify(name)} is not a namespace name`);
  }
  return { all: false, namespaces: names };
}

/**
 * The list-and-watch path of a resource in a namespace, or across the cluster (`namespace`
 * undefined): `/apis/apps/v1/namespaces/ns/deployments`, `/api/v1/pods` …
 */
export function watchPath(apiVersion: string, resource: string, namespace?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}${namespace === undefined ? '' : `/namespaces/${namespace}`}/${resource}`;
}

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
   * unwatched ServiceMonitor or Secret, a lost watch event) is still put right; the reconciler
   * re-applies everything on such a pass (see Reconciler's resyncMs).
   */
  readonly resyncMs?: number;
  /**
   * Where to watch (default: every namespace). With namespaces, each kind has one informer per
   * namespace, and the operator needs list and watch only there (the chart's Roles).
   */
  readonly scope?: WatchScope;
}

type Lister = () => Promise<KubernetesListObject<KubernetesObject>>;

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
  // Each kind's list across the cluster, and in one namespace.
  const lists: Record<string, { all: Lister; in: (namespace: string) => Lister }> = {
    clinicalsuites: {
      all: async () =>
        (await custom.listClusterCustomObject({
          group: GROUP,
          version: VERSION,
          plural: PLURAL,
        })) as KubernetesListObject<KubernetesObject>,
      in: (namespace) => async () =>
        (await custom.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
        })) as KubernetesListObject<KubernetesObject>,
    },
    deployments: {
      all: () => apps.listDeploymentForAllNamespaces(q),
      in: (namespace) => () => apps.listNamespacedDeployment({ namespace, ...q }),
    },
    pods: {
      all: () => core.listPodForAllNamespaces(q),
      in: (namespace) => () => core.listNamespacedPod({ namespace, ...q }),
    },
    persistentvolumeclaims: {
      all: () => core.listPersistentVolumeClaimForAllNamespaces(q),
      in: (namespace) => () => core.listNamespacedPersistentVolumeClaim({ namespace, ...q }),
    },
    services: {
      all: () => core.listServiceForAllNamespaces(q),
      in: (namespace) => () => core.listNamespacedService({ namespace, ...q }),
    },
    configmaps: {
      all: () => core.listConfigMapForAllNamespaces(q),
      in: (namespace) => () => core.listNamespacedConfigMap({ namespace, ...q }),
    },
    poddisruptionbudgets: {
      all: () => policy.listPodDisruptionBudgetForAllNamespaces(q),
      in: (namespace) => () => policy.listNamespacedPodDisruptionBudget({ namespace, ...q }),
    },
    networkpolicies: {
      all: () => networking.listNetworkPolicyForAllNamespaces(q),
      in: (namespace) => () => networking.listNamespacedNetworkPolicy({ namespace, ...q }),
    },
  };
  const listOf = (resource: string) => {
    const list = lists[resource];
    if (list === undefined) throw new Error(`no list for ${resource}`);
    return list;
  };
  const scope = options.scope ?? { all: true };
  const namespaces: readonly (string | undefined)[] = scope.all ? [undefined] : scope.namespaces;
  const kinds: [string, string, string | undefined, (o: KubernetesObject) => void][] = [
    ['clinicalsuites', `${GROUP}/${VERSION}`, undefined, suiteKey],
    ...WATCHED_KINDS.map((k): [string, string, string | undefined, (o: KubernetesObject) => void] => [
      k.resource,
      k.apiVersion,
      owned,
      byOwner,
    ]),
  ];
  const specs = namespaces.flatMap((namespace) =>
    kinds.map(([resource, apiVersion, selector, map]) => ({
      what: namespace === undefined ? resource : `${resource} in ${namespace}`,
      path: watchPath(apiVersion, resource, namespace),
      list: namespace === undefined ? listOf(resource).all : listOf(resource).in(namespace),
      selector,
      map,
      suites: resource === 'clinicalsuites',
    })),
  );
  let stopped = false;
  const informers = specs.map(({ what, path, list, selector, map }) => {
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
    void informer.start().catch((e: unknown) => onError(specs[i]?.what ?? 'informer', e));
  }
  const suites = informers.filter((_, i) => specs[i]?.suites === true);
  const resyncMs = options.resyncMs ?? 0;
  const timer =
    resyncMs > 0
      ? setInterval(() => {
          for (const informer of suites) for (const suite of informer.list()) suiteKey(suite);
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
