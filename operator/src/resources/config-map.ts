/**
 * A component's ConfigMap: its non-secret environment (the shared service contract with in-pod
 * values), read by the pod through `envFrom`. Tokens stay out of it: they come from Secrets.
 */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { serviceEnv } from '../plan/service-env.js';
import { componentMetadata } from './metadata.js';
import { plannedModel } from './model.js';
import { objectName } from './names.js';
import { sorted } from './stable.js';
import { DATA_DIR, MODELS_DIR, POD_HOST, POD_PORT, type OwnedSuite } from './types.js';
import type { ConfigMapObject } from './wire.js';

/** In-cluster base URL of a component's Service. */
export function serviceUrl(suite: OwnedSuite, key: ComponentKey): string {
  return `http://${objectName(suite, key)}.${suite.metadata.namespace}.svc:${POD_PORT}`;
}

/** The env data of the ConfigMap, keys sorted (as the API server returns them). */
export function configData(suite: OwnedSuite, key: ComponentKey): Record<string, string> {
  return sorted(
    serviceEnv({
      suite,
      key,
      port: POD_PORT,
      host: POD_HOST,
      modelsDir: MODELS_DIR,
      dataDir: DATA_DIR,
      model: plannedModel(suite, key),
      urlOf: (dep) => serviceUrl(suite, dep),
    }),
  );
}

export function buildConfigMap(suite: OwnedSuite, key: ComponentKey): ConfigMapObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    data: configData(suite, key),
  };
}
