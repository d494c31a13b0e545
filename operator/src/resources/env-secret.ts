/**
 * Credentials never in ConfigMaps or pod specs. An env entry of the spec given as a plain `value`
 * that holds a credential (a DATABASE_URL, a name ending in _PASSWORD, _TOKEN, _SECRET, _API_KEY …,
 * a URL carrying a password, a `password=` parameter) is moved into the Secret `<suite>-env-secrets`,
 * owned by the suite, and the container reads it through a `secretKeyRef`; a ConfigMap or a
 * Deployment (readable by Kubernetes' `view` role, which cannot read Secrets) never holds it.
 *
 * Moved rather than refused: the local runner takes the same spec and has no Secrets, so a plain
 * value must stay valid, and a suite written before this rule keeps working (its ConfigMap is
 * cleaned on the next reconcile). The value is still in the ClinicalSuite itself, so the reconciler
 * warns (a `PlainCredential` event) and the way to keep it out of there too is a Secret of one's own
 * referenced with `valueFrom.secretKeyRef` (helm/clinical-suite/README.md).
 *
 * A changed value must roll the pods (the kubelet reads env at container start) without writing a
 * digest of it where the Secret's readers are not the only readers: each key is named
 * `<dir>.<NAME>.<hmac>`, an HMAC of the value under a random key kept in the same Secret
 * (`digest-key`, made by the reconciler), so a new value is a new key name in the pod template, and
 * the name reveals nothing of the value to whoever can read the Deployment.
 */
import { createHmac } from 'node:crypto';
import {
  COMPONENT_KEYS,
  COMPONENTS,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_PART_OF,
  MANAGED_BY,
  PART_OF,
  type ComponentKey,
  type EnvVar,
} from '../api/v1alpha1/index.js';
import { suiteObjectName } from './names.js';
import { ownerReference } from './owner.js';
import { sorted } from './stable.js';
import type { OwnedSuite } from './types.js';
import type { SecretObject } from './wire.js';

/** The key of the env Secret holding the HMAC key of its key names (never read by a pod). */
export const ENV_SECRET_DIGEST_KEY = 'digest-key';
/** Hex digits of the HMAC in a key name: 64 bits, enough that two values never share one. */
const DIGEST_LENGTH = 16;

/**
 * A name that says it holds a credential (`_TOKENS`, a count, is not one), and libpq's and MySQL's
 * password variables (PGPASSWORD, MYSQL_PWD; the shell's PWD is a directory).
 */
const CREDENTIAL_NAME =
  /(^|_)(PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|APIKEY|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)$|^PGPASSWORD$|_PWD$/i;
/** `scheme://user:password@host…`: userinfo with a password. */
const URL_PASSWORD = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#@\s:]*:[^/?#@\s]*@/;
/** libpq's `password=…` keyword or a URL's `?password=…` parameter. */
const PASSWORD_PARAM = /(^|[\s?&;])(password|passwd|pwd|sslpassword)=/i;

/** Env names of the shared stores (DATABASE_URL): a database address, moved whatever its form. */
const STORE_ENV: ReadonlySet<string> = new Set(
  COMPONENT_KEYS.flatMap((key) => {
    const env = COMPONENTS[key].sharedStoreEnv;
    return env === undefined ? [] : [env];
  }),
);

/** Why a plain env value is a credential, or null when it is not one. An empty value never is. */
export function credentialReason(name: string, value: string): string | null {
  if (value === '') return null;
  if (STORE_ENV.has(name)) return 'a database address, which may carry its password';
  if (CREDENTIAL_NAME.test(name)) return 'its name says it holds a credential';
  if (URL_PASSWORD.test(value)) return 'a URL carrying a password';
  if (PASSWORD_PARAM.test(value)) return 'it carries a password parameter';
  return null;
}

export function envSecretName(suite: { readonly metadata: { readonly name: string } }): string {
  return suiteObjectName(suite, 'env-secrets');
}

/** One plain credential of the spec, where it is and the key it moves to. */
export interface PlainCredential {
  readonly component: ComponentKey;
  /** `spec.services.<key>.env[<i>]` or `spec.services.<key>.model.fetchEnv[<i>]`. */
  readonly path: string;
  readonly name: string;
  readonly reason: string;
}

/** The components whose env reaches a pod: the enabled ones and the store owners they read. */
function relevantComponents(suite: OwnedSuite): Set<ComponentKey> {
  const services = suite.spec.services;
  return new Set(
    COMPONENT_KEYS.filter((key) => services[key]?.enabled === true).flatMap((key) => {
      const owner = COMPONENTS[key].readsStoreOf;
      return owner === undefined ? [key] : [key, owner];
    }),
  );
}

export interface EnvSecretPlan {
  /** The suite with each plain credential replaced by a reference to the env Secret. */
  readonly suite: OwnedSuite;
  /** What was moved (empty: nothing, and no env Secret is needed). */
  readonly moved: readonly PlainCredential[];
  /** The env Secret's `data` (base64, keys sorted, the digest key included), or null when nothing moved. */
  readonly data: Record<string, string> | null;
}

/**
 * Moves every plain credential of the suite's env and `model.fetchEnv` into the env Secret: the
 * rewritten suite (what every builder then reads) and the Secret's data. `digestKey` keys the HMAC
 * of the key names (see above). Idempotent: a rewritten suite has nothing left to move.
 */
export function planEnvSecret(suite: OwnedSuite, digestKey: string): EnvSecretPlan {
  const secretName = envSecretName(suite);
  const moved: PlainCredential[] = [];
  const values: Record<string, string> = {};
  const relevant = relevantComponents(suite);
  const rewrite = (key: ComponentKey, field: 'env' | 'fetchEnv', env: readonly EnvVar[]): EnvVar[] =>
    env.map((e, i) => {
      const value = e.value ?? '';
      const reason = e.valueFrom === undefined ? credentialReason(e.name, value) : null;
      if (reason === null) return e;
      const dir = COMPONENTS[key].dir;
      const digest = createHmac('sha256', digestKey)
        .update(`${dir}\0${field}\0${e.name}\0${value}`)
        .digest('hex')
        .slice(0, DIGEST_LENGTH);
      const secretKey = [dir, ...(field === 'fetchEnv' ? ['fetch'] : []), e.name, digest].join('.');
      values[secretKey] = value;
      moved.push({
        component: key,
        path: `spec.services.${key}.${field === 'env' ? 'env' : 'model.fetchEnv'}[${i}]`,
        name: e.name,
        reason,
      });
      return { name: e.name, valueFrom: { secretKeyRef: { name: secretName, key: secretKey } } };
    });
  const services = { ...suite.spec.services };
  for (const key of COMPONENT_KEYS) {
    const spec = services[key];
    if (spec === undefined || !relevant.has(key)) continue;
    const env = rewrite(key, 'env', spec.env);
    const fetchEnv =
      spec.model?.fetchEnv === undefined ? undefined : rewrite(key, 'fetchEnv', spec.model.fetchEnv);
    (services as Record<ComponentKey, typeof spec>)[key] = {
      ...spec,
      env,
      ...(spec.model === undefined || fetchEnv === undefined ? {} : { model: { ...spec.model, fetchEnv } }),
    };
  }
  if (moved.length === 0) return { suite, moved, data: null };
  values[ENV_SECRET_DIGEST_KEY] = digestKey;
  const data = sorted(
    Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  );
  return { suite: { ...suite, spec: { ...suite.spec, services } }, moved, data };
}

/** The env Secret: the plan's data, labelled as the suite's and owned by it. */
export function buildEnvSecret(suite: OwnedSuite, data: Record<string, string>): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: envSecretName(suite),
      namespace: suite.metadata.namespace,
      labels: {
        [LABEL_INSTANCE]: suite.metadata.name,
        [LABEL_MANAGED_BY]: MANAGED_BY,
        [LABEL_PART_OF]: PART_OF,
      },
      ownerReferences: [ownerReference(suite)],
    },
    type: 'Opaque',
    data,
  };
}

/** The Warning the reconciler records for each moved credential: it is still in the ClinicalSuite. */
export function plainCredentialWarning(
  suite: OwnedSuite,
  moved: PlainCredential,
): {
  reason: string;
  message: string;
} {
  return {
    reason: 'PlainCredential',
    message:
      `${moved.path} (${moved.name}) is a plain value that holds a credential (${moved.reason}): it is kept ` +
      `in Secret ${envSecretName(suite)}, out of ConfigMaps and pod specs, but stays readable in the ` +
      'ClinicalSuite; put it in a Secret of your own and reference it with valueFrom.secretKeyRef',
  };
}
