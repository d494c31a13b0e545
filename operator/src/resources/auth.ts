/**
 * Bearer tokens in pods: every token a component needs (its own and those of what it calls, from
 * the shared contract) as an env var read from a Secret key. Refs come from `spec.auth`; when unset,
 * one Secret `<suite>-auth` holds both under fixed keys (the reconciler generates it: random
 * values are no business of a pure builder).
 */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { tokenEnvNames } from '../plan/service-env.js';
import { suiteObjectName } from './names.js';
import type { OwnedSuite } from './types.js';
import type { EnvVar } from './wire.js';

/** Keys of the generated auth Secret, by token env var. */
export const AUTH_SECRET_KEYS: Readonly<Record<string, string>> = {
  API_TOKEN: 'api-token',
  AI_AGENT_API_TOKEN: 'agent-token',
};

export function authSecretName(suite: OwnedSuite): string {
  return suiteObjectName(suite, 'auth');
}

export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
}

/** Where the value of token env var `envName` lives. */
export function tokenSecretRef(suite: OwnedSuite, envName: string): SecretKeyRef {
  const { auth } = suite.spec;
  const explicit =
    envName === 'API_TOKEN'
      ? auth.apiTokenSecretRef
      : envName === 'AI_AGENT_API_TOKEN'
        ? auth.agentTokenSecretRef
        : undefined;
  return explicit ?? { name: authSecretName(suite), key: AUTH_SECRET_KEYS[envName] ?? envName.toLowerCase() };
}

/** The token env vars of a component's container. */
export function tokenEnv(suite: OwnedSuite, key: ComponentKey): EnvVar[] {
  return tokenEnvNames(suite, key).map((name) => {
    const ref = tokenSecretRef(suite, name);
    return { name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } };
  });
}
