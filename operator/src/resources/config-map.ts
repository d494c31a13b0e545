/**
 * A component's ConfigMap: its non-secret environment (the shared service contract with in-pod
 * values), read by the pod through `envFrom`. Tokens stay out of it: they come from Secrets.
 *
 * A component that reads another's store (the task proxy, the task agent's) gets the owner's
 * shared store variable (DATABASE_URL) when the owner's spec env sets it. The owner's embedded
 * SQLite file lives in its own pod and cannot be shared, so otherwise the reader has no store:
 * see {@link storeWarnings}. A DATABASE_URL taken from a Secret (`valueFrom`) is in neither
 * ConfigMap: both containers get the reference (env.ts).
 */
import { COMPONENTS, type ComponentKey } from '../api/v1alpha1/index.js';
import { serviceEnv, storeEnvFor } from '../plan/service-env.js';
import { authDisabledWarning } from '../plan/auth-warnings.js';
import { describeUnreadEnv, unreadEnv, unreadFetchEnv } from '../plan/unread-env.js';
import { usersFileEnv } from './auth.js';
import { referencedEnv } from './env.js';
import { componentMetadata } from './metadata.js';
import { plannedModel, plannedProjector } from './model.js';
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
  const owner = COMPONENTS[key].readsStoreOf;
  return sorted(
    serviceEnv({
      suite,
      key,
      port: POD_PORT,
      host: POD_HOST,
      runtime: usersFileEnv(suite, key),
      modelsDir: MODELS_DIR,
      dataDir: DATA_DIR,
      model: plannedModel(suite, key),
      projector: plannedProjector(suite, key),
      urlOf: (dep) => serviceUrl(suite, dep),
      ...(owner === undefined || owner === key
        ? {}
        : { storeEnv: storeEnvFor(owner, configData(suite, owner), null) }),
    }),
  );
}

export interface ConfigWarning {
  /** CamelCase, as an Event's reason. */
  readonly reason: string;
  readonly message: string;
}

/**
 * What works but not fully with this configuration, for the user to hear about (the reconciler
 * records them as Warning events when it applies the component): a store reader without a store
 * answers its offline queries with 503.
 */
export function storeWarnings(suite: OwnedSuite, key: ComponentKey): ConfigWarning[] {
  const owner = COMPONENTS[key].readsStoreOf;
  if (owner === undefined || owner === key) return [];
  const shared = COMPONENTS[owner].sharedStoreEnv;
  if (shared === undefined || configData(suite, key)[shared] !== undefined) return [];
  if (referencedEnv(suite, key).some((e) => e.name === shared)) return [];
  return [
    {
      reason: 'NoSharedStore',
      message:
        `${key}: while ${owner} is offline it cannot answer from ${owner}'s stored data (it answers 503): ` +
        `${owner} keeps an embedded store in its own pod; set ${shared} in spec.services.${owner}.env ` +
        `(PostgreSQL) and ${key} gets it too`,
    },
  ];
}

/**
 * Every warning about the component's configuration: {@link storeWarnings}, auth turned off
 * (plan/auth-warnings.ts), and each `env` or `model.fetchEnv` name that nothing in its pod reads
 * (plan/unread-env.ts).
 */
export function configWarnings(suite: OwnedSuite, key: ComponentKey): ConfigWarning[] {
  const authOff = authDisabledWarning(suite, key);
  return [
    ...storeWarnings(suite, key),
    ...(authOff === null ? [] : [{ reason: 'AuthDisabled', message: authOff }]),
    ...[...unreadEnv(suite, key), ...unreadFetchEnv(suite, key)].map((unread) => ({
      reason: 'UnreadEnv',
      message: describeUnreadEnv(unread),
    })),
  ];
}

export function buildConfigMap(suite: OwnedSuite, key: ComponentKey): ConfigMapObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    data: configData(suite, key),
  };
}
