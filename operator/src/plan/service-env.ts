/**
 * The contract every ClinicalSuite service is started with, whatever runs it: the model it loads
 * and the environment the kit's config reads (services/kit/src/config.ts). The local runner
 * (operator/src/local/plan.ts) and the operator's builders (operator/src/resources) both derive
 * their env from here, so a process on a laptop and a pod in a cluster are configured alike.
 * Pure: a function of the parsed suite and the arguments.
 */
import { isAbsolute, posix } from 'node:path';
import {
  COMPONENT_KEYS,
  COMPONENTS,
  effectiveDependsOn,
  type ComponentKey,
  type Suite,
} from '../api/v1alpha1/index.js';

/** Model files by manifest id, relative to the models directory (the kit's MODEL_MANIFEST fits). */
export type ModelFiles = Readonly<Record<string, { readonly file: string }>>;

export interface PlannedModel {
  /** Manifest id of the model, when it comes from the manifest. */
  readonly id: string | null;
  /** The spec's `model.source`, which replaces the manifest's sources. */
  readonly source: string | null;
  readonly sha256: string | null;
  /** Path relative to the models directory. */
  readonly file: string;
  /** Absolute path: what MODEL_PATH says. */
  readonly path: string;
}

/** The last path segment of a source URI (`hf://o/r/x.gguf@rev` → `x.gguf`). */
export function sourceBaseName(source: string): string {
  const path = source.replace(/^[a-z]+:\/\//i, '').replace(/[?#].*$/, '');
  const last =
    path
      .split('/')
      .filter((s) => s !== '')
      .pop() ?? '';
  const name = source.startsWith('hf://') ? last.replace(/@[^@]*$/, '') : last;
  return name === '' || name === '.' || name === '..' ? 'model' : decodeURIComponent(name);
}

/**
 * The model `key` loads, or null when it needs none: the spec's `model.file`/`model.source`, else
 * the catalogue's manifest id (its file from `manifest`, else `<dir>/<id>`). Files live under the
 * component's directory so one models directory (or volume) never mixes two components' files.
 * `join` builds the absolute path: the host's for the local runner, POSIX (the default) in a pod.
 */
export function planModel(
  suite: Suite,
  key: ComponentKey,
  modelsDir: string,
  manifest: ModelFiles | undefined,
  join: (...parts: string[]) => string = (...parts) => posix.join(...parts),
): PlannedModel | null {
  const spec = suite.spec.services[key]?.model;
  const c = COMPONENTS[key];
  const source = spec?.source ?? null;
  const id = source === null ? c.model : null;
  let file: string;
  if (spec?.file !== undefined) file = `${c.dir}/${spec.file}`;
  else if (source !== null) file = `${c.dir}/${sourceBaseName(source)}`;
  else if (id !== null) file = manifest?.[id]?.file ?? `${c.dir}/${id}`;
  else return null;
  return { id, source, sha256: spec?.sha256 ?? null, file, path: join(modelsDir, ...file.split('/')) };
}

/**
 * The multimodal projector `key` loads beside its model (the spec's `model.projector`), or null:
 * `<dir>/<projector.file>`, else `<dir>/<source's base name>`. Planned with an existing claim too
 * (the file is expected on it); whether it is fetched is the runtime's business (it has a source).
 */
export function planProjector(
  suite: Suite,
  key: ComponentKey,
  modelsDir: string,
  join: (...parts: string[]) => string = (...parts) => posix.join(...parts),
): PlannedModel | null {
  const spec = suite.spec.services[key]?.model?.projector;
  if (spec === undefined || COMPONENTS[key].projectorEnv === undefined) return null;
  const source = spec.source ?? null;
  // The schema requires a source or a file.
  const file = `${COMPONENTS[key].dir}/${spec.file ?? sourceBaseName(source ?? '')}`;
  return { id: null, source, sha256: spec.sha256 ?? null, file, path: join(modelsDir, ...file.split('/')) };
}

/**
 * The component's further models (the catalogue's `extraModels`), at their manifest paths under
 * the models directory, where the service looks for them by default. None when the spec mounts an
 * existing claim (it holds everything) or the manifest lacks them.
 */
export function planExtraModels(
  suite: Suite,
  key: ComponentKey,
  modelsDir: string,
  manifest: ModelFiles | undefined,
  join: (...parts: string[]) => string = (...parts) => posix.join(...parts),
): PlannedModel[] {
  if (suite.spec.services[key]?.model?.existingClaim !== undefined) return [];
  return (COMPONENTS[key].extraModels ?? []).flatMap((id) => {
    const file = manifest?.[id]?.file;
    if (file === undefined) return [];
    return [{ id, source: null, sha256: null, file, path: join(modelsDir, ...file.split('/')) }];
  });
}

/**
 * Token env vars `key` needs: its own (the tokens it accepts), then those of what it calls (the
 * agent gets API_TOKEN to call the llm). Catalogue order, no duplicates.
 */
export function tokenEnvNames(suite: Suite, key: ComponentKey): string[] {
  const deps = effectiveDependsOn(suite.spec.services, key);
  return [...new Set([key, ...deps].flatMap((k) => COMPONENTS[k].tokenEnv))];
}

/** The env vars of the first user `key` lets sign in (its catalogue's `signIn`), which only it receives. */
export function signInEnvNames(key: ComponentKey): string[] {
  const signIn = COMPONENTS[key].signIn;
  return signIn === undefined ? [] : [signIn.userEnv, signIn.passwordEnv];
}

/**
 * The env that points a component reading `owner`'s store (the catalogue's `readsStoreOf`) at it,
 * derived from the owner's env as planned (`ownerEnv`, the spec's `env` applied): the owner's shared
 * store variable (DATABASE_URL) when it has one; otherwise its embedded file (TASK_AGENT_DB, default
 * `$DATA_DIR/<file>`, a relative path taken from the owner's working directory) when the reader runs
 * on the same machine (`ownerCwd` given); otherwise nothing (a pod cannot reach another pod's file).
 */
export function storeEnvFor(
  owner: ComponentKey,
  ownerEnv: Readonly<Record<string, string>>,
  ownerCwd: string | null,
  join: (...parts: string[]) => string = (...parts) => posix.join(...parts),
): Record<string, string> {
  const { sharedStoreEnv, embeddedStore } = COMPONENTS[owner];
  const shared = sharedStoreEnv === undefined ? undefined : ownerEnv[sharedStoreEnv];
  if (sharedStoreEnv !== undefined && shared !== undefined && shared !== '')
    return { [sharedStoreEnv]: shared };
  if (embeddedStore === undefined || ownerCwd === null) return {};
  const explicit = ownerEnv[embeddedStore.env];
  const dataDir = ownerEnv['DATA_DIR'];
  const file =
    explicit !== undefined && explicit !== ''
      ? explicit
      : dataDir === undefined
        ? null
        : join(dataDir, embeddedStore.file);
  if (file === null) return {};
  return { [embeddedStore.env]: isAbsolute(file) ? file : join(ownerCwd, file) };
}

export interface ServiceEnvInput {
  readonly suite: Suite;
  readonly key: ComponentKey;
  /** What the service listens on (PORT, HOST). */
  readonly port: number;
  readonly host: string;
  /** Runtime-specific variables, placed after PORT and HOST (the spec's `env` still wins over them). */
  readonly runtime?: Readonly<Record<string, string>>;
  readonly modelsDir: string;
  readonly dataDir: string;
  readonly model: PlannedModel | null;
  /** Its multimodal projector ({@link planProjector}), named by the catalogue's `projectorEnv`. */
  readonly projector?: PlannedModel | null;
  /** Base URL of a dependency, as this runtime reaches it. */
  readonly urlOf: (dep: ComponentKey) => string;
  /**
   * Secret values by env name: tokens, and the sign-in user of a component that has one. A name
   * without a value is left out (a pod takes them from a Secret).
   */
  readonly tokens?: Readonly<Record<string, string>>;
  /**
   * For a component that reads another's store (`readsStoreOf`): where that store is, as this
   * runtime reaches it (see {@link storeEnvFor}). Placed after the upstream URLs.
   */
  readonly storeEnv?: Readonly<Record<string, string>>;
}

/**
 * The service's environment: listen address, runtime extras, directories, the concurrency limit,
 * queue and deadline, MODEL_PATH (and the projector's variable), tokens (and sign-in user),
 * upstream URLs (`<DEP>_URL`), the store it reads, and finally the spec's `env`, which wins over
 * everything but PORT and HOST (the schema rejects those two).
 */
export function serviceEnv(input: ServiceEnvInput): Record<string, string> {
  const { suite, key } = input;
  const spec = suite.spec.services[key];
  const env: Record<string, string> = {};
  env['PORT'] = String(input.port);
  env['HOST'] = input.host;
  Object.assign(env, input.runtime);
  env['MODELS_DIR'] = input.modelsDir;
  env['DATA_DIR'] = input.dataDir;
  env['MAX_CONCURRENCY'] = String(spec?.concurrency ?? COMPONENTS[key].concurrency);
  if (spec?.queueSize !== undefined) env['QUEUE_SIZE'] = String(spec.queueSize);
  if (spec?.requestTimeoutSeconds !== undefined) {
    env['REQUEST_TIMEOUT_MS'] = String(spec.requestTimeoutSeconds * 1000);
  }
  if (input.model) env['MODEL_PATH'] = input.model.path;
  const projectorEnv = COMPONENTS[key].projectorEnv;
  if (input.projector && projectorEnv !== undefined) env[projectorEnv] = input.projector.path;
  for (const name of [...tokenEnvNames(suite, key), ...signInEnvNames(key)]) {
    const value = input.tokens?.[name];
    if (value !== undefined) env[name] = value;
  }
  for (const dep of effectiveDependsOn(suite.spec.services, key))
    env[COMPONENTS[dep].urlEnv] = input.urlOf(dep);
  Object.assign(env, input.storeEnv);
  const referenced = new Set<string>();
  for (const e of spec?.env ?? []) {
    // Neither value nor valueFrom: an empty value, as Kubernetes reads such an entry.
    if (e.valueFrom === undefined) env[e.name] = e.value ?? '';
    else referenced.add(e.name);
  }
  // A reference (valueFrom) is resolved by the kubelet on the container itself, never copied here;
  // it replaces whatever the suite would set under that name.
  return referenced.size === 0
    ? env
    : Object.fromEntries(Object.entries(env).filter(([n]) => !referenced.has(n)));
}

/**
 * The spec's env entries of enabled components that take their value from a Secret or ConfigMap
 * (`valueFrom`), as `spec.services.<key>.env[<i>] (<NAME>)`, and those of a store owner an enabled
 * component reads (the task agent's DATABASE_URL for the task proxy): only Kubernetes resolves them,
 * so the local runner refuses a suite that has any.
 */
export function clusterOnlyEnv(suite: Suite): string[] {
  const services = suite.spec.services;
  // An enabled component's env, and that of the owner of a store it reads (its DATABASE_URL).
  const relevant = new Set(
    COMPONENT_KEYS.filter((key) => services[key]?.enabled === true).flatMap((key) => {
      const owner = COMPONENTS[key].readsStoreOf;
      return owner === undefined ? [key] : [key, owner];
    }),
  );
  return COMPONENT_KEYS.flatMap((key) => {
    const spec = services[key];
    if (spec === undefined || !relevant.has(key)) return [];
    return spec.env.flatMap((e, i) =>
      e.valueFrom === undefined ? [] : [`spec.services.${key}.env[${i}] (${e.name})`],
    );
  });
}
