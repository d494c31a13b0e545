/**
 * Credentials in pods: every token a component needs (its own and those of what it calls, from
 * the shared contract) as an env var read from a Secret key, and the users of a component that
 * signs users in (the task proxy). Refs come from `spec.auth`; when unset, one Secret `<suite>-auth`
 * holds them under fixed keys (the reconciler fills it with {@link authSecretData}; random values
 * are no business of a pure builder, so the generator is passed in).
 *
 * Sign-in (the catalogue's `signIn`): with `spec.auth.taskProxyUsersSecretRef` that Secret key is
 * mounted read-only as the users file (the proxy re-reads it when the Secret changes); without it
 * the proxy gets one user, TASK_PROXY_USER / TASK_PROXY_PASSWORD from the generated Secret.
 */
import {
  COMPONENT_KEYS,
  COMPONENTS,
  TOKEN_ENV_NAMES,
  type ComponentKey,
  type SuiteSpec,
} from '../api/v1alpha1/index.js';
import { signInEnvNames, tokenEnvNames } from '../plan/service-env.js';
import { suiteObjectName } from './names.js';
import { sorted } from './stable.js';
import type { OwnedSuite } from './types.js';
import type { EnvVar, Volume, VolumeMount } from './wire.js';

/** Keys of the generated auth Secret, by env var. */
export const AUTH_SECRET_KEYS: Readonly<Record<string, string>> = {
  API_TOKEN: 'api-token',
  AI_AGENT_API_TOKEN: 'agent-token',
  TASK_AGENT_API_TOKEN: 'task-agent-token',
  FACE_API_TOKEN: 'face-token',
  MEDLLM_API_TOKEN: 'medllm-token',
  REASONING_API_TOKEN: 'reasoning-token',
  STT_API_TOKEN: 'stt-token',
  OCR_API_TOKEN: 'ocr-token',
  TTS_API_TOKEN: 'tts-token',
  CODE_SEARCH_API_TOKEN: 'code-search-token',
  PATIENT_SIM_API_TOKEN: 'patient-sim-token',
  TASK_PROXY_USER: 'task-proxy-user',
  TASK_PROXY_PASSWORD: 'task-proxy-password',
};

type AuthSpec = SuiteSpec['auth'];

/** The `spec.auth` field that names the Secret key of a token env var. */
const TOKEN_REF_FIELDS: Readonly<Record<string, keyof AuthSpec>> = {
  API_TOKEN: 'apiTokenSecretRef',
  AI_AGENT_API_TOKEN: 'agentTokenSecretRef',
  TASK_AGENT_API_TOKEN: 'taskAgentTokenSecretRef',
};

/** Where a sign-in component's users file is mounted (a directory: the Secret's updates reach it). */
export const USERS_DIR = '/etc/clinicalsuite/users';
export const USERS_FILE = `${USERS_DIR}/users`;
const USERS_VOLUME = 'users';
/** Owner and group (fsGroup) may read it; nobody else. */
const USERS_FILE_MODE = 0o440;

export function authSecretName(suite: OwnedSuite): string {
  return suiteObjectName(suite, 'auth');
}

export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
}

/** Where the value of token (or sign-in) env var `envName` lives. */
export function tokenSecretRef(suite: OwnedSuite, envName: string): SecretKeyRef {
  const field = TOKEN_REF_FIELDS[envName];
  const explicit = field === undefined ? undefined : suite.spec.auth[field];
  return explicit ?? { name: authSecretName(suite), key: AUTH_SECRET_KEYS[envName] ?? envName.toLowerCase() };
}

/** The users Secret of a component that signs users in, or null (none, or its user from the generated Secret). */
export function usersSecretRef(suite: OwnedSuite, key: ComponentKey): SecretKeyRef | null {
  if (COMPONENTS[key].signIn === undefined) return null;
  return suite.spec.auth.taskProxyUsersSecretRef ?? null;
}

/** The token (and sign-in user) env vars of a component's container, from Secrets. */
export function tokenEnv(suite: OwnedSuite, key: ComponentKey): EnvVar[] {
  const signIn = usersSecretRef(suite, key) === null ? signInEnvNames(key) : [];
  return [...tokenEnvNames(suite, key), ...signIn].map((name) => {
    const ref = tokenSecretRef(suite, name);
    return { name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } };
  });
}

/** The env (for the ConfigMap) that names the mounted users file, when there is one. */
export function usersFileEnv(suite: OwnedSuite, key: ComponentKey): Record<string, string> {
  const signIn = COMPONENTS[key].signIn;
  if (signIn === undefined || usersSecretRef(suite, key) === null) return {};
  return { [signIn.usersFileEnv]: USERS_FILE };
}

/** The users Secret as a volume and its read-only mount, or nothing. */
export function usersVolume(
  suite: OwnedSuite,
  key: ComponentKey,
): { volumes: Volume[]; volumeMounts: VolumeMount[] } {
  const ref = usersSecretRef(suite, key);
  if (ref === null) return { volumes: [], volumeMounts: [] };
  return {
    volumes: [
      {
        name: USERS_VOLUME,
        secret: {
          secretName: ref.name,
          items: [{ key: ref.key, path: USERS_FILE.slice(USERS_DIR.length + 1) }],
          defaultMode: USERS_FILE_MODE,
        },
      },
    ],
    volumeMounts: [{ name: USERS_VOLUME, mountPath: USERS_DIR, readOnly: true }],
  };
}

/**
 * The keys the generated Secret must hold: every token without an explicit ref, and the sign-in
 * user and password unless a users Secret is given. All of them whichever components are enabled,
 * so that enabling one later needs nothing new.
 */
export function authSecretKeys(suite: OwnedSuite): string[] {
  const generated = (name: string) => {
    const ref = tokenSecretRef(suite, name);
    return ref.name === authSecretName(suite) ? [ref.key] : [];
  };
  const signIn = COMPONENT_KEYS.filter((key) => usersSecretRef(suite, key) === null).flatMap(signInEnvNames);
  return [...new Set([...TOKEN_ENV_NAMES, ...signIn].flatMap(generated))];
}

/** Values of the generated Secret that are not random: the sign-in users' default names, by key. */
function fixedValues(suite: OwnedSuite): Map<string, string> {
  return new Map(
    COMPONENT_KEYS.flatMap((key) => {
      const signIn = COMPONENTS[key].signIn;
      return signIn === undefined ? [] : [[tokenSecretRef(suite, signIn.userEnv).key, signIn.defaultUser]];
    }),
  );
}

/**
 * The `data` of the generated auth Secret (base64 values): the existing values kept as they are,
 * a value for each missing key (the sign-in user's default name, otherwise `generate()`: a random
 * token). Null when nothing is missing, so an existing Secret is written only to add keys (a
 * suite created before a component that needs a new one).
 */
export function authSecretData(
  suite: OwnedSuite,
  existing: Readonly<Record<string, string>> | undefined,
  generate: () => string,
): Record<string, string> | null {
  const missing = authSecretKeys(suite).filter((key) => existing?.[key] === undefined);
  if (missing.length === 0) return null;
  const fixed = fixedValues(suite);
  const data: Record<string, string> = { ...existing };
  for (const key of missing) data[key] = Buffer.from(fixed.get(key) ?? generate()).toString('base64');
  return sorted(data);
}
