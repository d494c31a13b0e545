/**
 * REST paths of the kinds the operator reads and writes. A fixed table, not discovery: the
 * operator only ever touches these.
 */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string | undefined };
}

const PLURALS: Readonly<Record<string, string>> = {
  ConfigMap: 'configmaps',
  Secret: 'secrets',
  Service: 'services',
  PersistentVolumeClaim: 'persistentvolumeclaims',
  Pod: 'pods',
  Event: 'events',
  Deployment: 'deployments',
  PodDisruptionBudget: 'poddisruptionbudgets',
  NetworkPolicy: 'networkpolicies',
  ServiceMonitor: 'servicemonitors',
  Lease: 'leases',
  ClinicalSuite: 'clinicalsuites',
  CustomResourceDefinition: 'customresourcedefinitions',
};

/** `/api/v1/namespaces/ns/configmaps/name`, `/apis/apps/v1/namespaces/ns/deployments/name` … */
export function resourcePath(ref: ObjectRef): string {
  const plural = PLURALS[ref.kind];
  if (plural === undefined) throw new Error(`no REST path known for kind ${ref.kind}`);
  const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  const ns =
    ref.metadata.namespace === undefined ? '' : `/namespaces/${encodeURIComponent(ref.metadata.namespace)}`;
  return `${base}${ns}/${plural}/${encodeURIComponent(ref.metadata.name)}`;
}
