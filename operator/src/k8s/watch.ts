/**
 * Informers that turn cluster changes into reconcile keys (`namespace/name` of a ClinicalSuite):
 * the suites themselves, and the objects they own (mapped to their owner through the instance
 * label). Level-triggered: what changed does not matter, only which suite to look at again.
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  makeInformer,
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

export interface Watcher {
  stop(): Promise<void>;
}

export function watchSuites(
  kc: KubeConfig,
  enqueue: (key: string) => void,
  onError: (what: string, error: unknown) => void,
): Watcher {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const owned = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
  const bySuite = (obj: KubernetesObject) => {
    const ns = obj.metadata?.namespace;
    if (ns !== undefined && obj.metadata?.name !== undefined) enqueue(`${ns}/${obj.metadata.name}`);
  };
  const byOwner = (obj: KubernetesObject) => {
    const ns = obj.metadata?.namespace;
    const instance = obj.metadata?.labels?.[LABEL_INSTANCE];
    if (ns !== undefined && instance !== undefined) enqueue(`${ns}/${instance}`);
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
      bySuite,
    ],
    [
      'deployments',
      '/apis/apps/v1/deployments',
      () => apps.listDeploymentForAllNamespaces({ labelSelector: owned }),
      owned,
      byOwner,
    ],
    ['pods', '/api/v1/pods', () => core.listPodForAllNamespaces({ labelSelector: owned }), owned, byOwner],
    [
      'persistentvolumeclaims',
      '/api/v1/persistentvolumeclaims',
      () => core.listPersistentVolumeClaimForAllNamespaces({ labelSelector: owned }),
      owned,
      byOwner,
    ],
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
  return {
    async stop() {
      stopped = true;
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
