/**
 * What the local runner runs, as data: one process spec per enabled component, in start order.
 * Pure: a function of the parsed suite, the catalogue and the options (no env, no clock, no I/O).
 */
import { join } from 'node:path';
import {
  COMPONENTS,
  dependencyOrder,
  effectiveDependsOn,
  type ComponentKey,
  type Suite,
} from '../api/v1alpha1/index.js';

export const LOCAL_HOST = '127.0.0.1';
const FIRST_PORT = COMPONENTS.llm.port;

export interface PlanOptions {
  /** `$CLINICALSUITE_HOME`: models, data, logs and tokens live under it. */
  readonly home: string;
  /** Directory holding `<dir>/dist/main.js` per component. */
  readonly servicesDir: string;
  /** Token values by env var name (API_TOKEN, AI_AGENT_API_TOKEN). */
  readonly tokens: Readonly<Record<string, string>>;
  /** Port of the llm; every other port keeps its distance to it. Default: the catalogue ports. */
  readonly basePortOverride?: number | undefined;
  /** The only variables of the runner's environment passed on. */
  readonly inherit?: { readonly PATH?: string; readonly HOME?: string; readonly LOG_LEVEL?: string };
  /** Model files by manifest id, relative to the models directory (the kit's MODEL_MANIFEST fits). */
  readonly manifest?: Readonly<Record<string, { readonly file: string }>>;
}

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

export interface ProcessSpec {
  readonly component: ComponentKey;
  readonly title: string;
  readonly dir: string;
  readonly entry: string;
  readonly port: number;
  readonly url: string;
  readonly env: Readonly<Record<string, string>>;
  readonly model: PlannedModel | null;
  readonly dependsOn: readonly ComponentKey[];
  readonly dataDir: string;
  readonly logFile: string;
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

function planModel(
  suite: Suite,
  key: ComponentKey,
  modelsDir: string,
  options: PlanOptions,
): PlannedModel | null {
  const spec = suite.spec.services[key]?.model;
  const c = COMPONENTS[key];
  const source = spec?.source ?? null;
  const id = source === null ? c.model : null;
  let file: string;
  if (spec?.file !== undefined) file = `${c.dir}/${spec.file}`;
  else if (source !== null) file = `${c.dir}/${sourceBaseName(source)}`;
  else if (id !== null) file = options.manifest?.[id]?.file ?? `${c.dir}/${id}`;
  else return null;
  return { id, source, sha256: spec?.sha256 ?? null, file, path: join(modelsDir, ...file.split('/')) };
}

export function portOf(key: ComponentKey, basePortOverride?: number): number {
  const port = COMPONENTS[key].port;
  return basePortOverride === undefined ? port : basePortOverride + (port - FIRST_PORT);
}

export function planLocal(suite: Suite, options: PlanOptions): ProcessSpec[] {
  const { services } = suite.spec;
  const modelsDir = join(options.home, 'models');
  const urlOf = (key: ComponentKey) => `http://${LOCAL_HOST}:${portOf(key, options.basePortOverride)}`;
  return dependencyOrder(services).map((key): ProcessSpec => {
    const c = COMPONENTS[key];
    const spec = services[key];
    const dependsOn = effectiveDependsOn(services, key);
    const model = planModel(suite, key, modelsDir, options);
    const dataDir = join(options.home, 'data', c.dir);
    const env: Record<string, string> = {};
    if (options.inherit?.PATH !== undefined) env['PATH'] = options.inherit.PATH;
    if (options.inherit?.HOME !== undefined) env['HOME'] = options.inherit.HOME;
    env['PORT'] = String(portOf(key, options.basePortOverride));
    env['HOST'] = LOCAL_HOST;
    env['LOG_LEVEL'] = options.inherit?.LOG_LEVEL ?? 'info';
    env['CLINICALSUITE_HOME'] = options.home;
    // The kit exits when its parent goes away, so a runner killed with SIGKILL leaves no orphans.
    env['EXIT_WITH_PARENT'] = 'true';
    env['MODELS_DIR'] = modelsDir;
    env['DATA_DIR'] = dataDir;
    env['MAX_CONCURRENCY'] = String(spec?.concurrency ?? c.concurrency);
    if (spec?.queueSize !== undefined) env['QUEUE_SIZE'] = String(spec.queueSize);
    if (spec?.requestTimeoutSeconds !== undefined) {
      env['REQUEST_TIMEOUT_MS'] = String(spec.requestTimeoutSeconds * 1000);
    }
    if (model) env['MODEL_PATH'] = model.path;
    // Its own token(s), then those of what it calls (the agent gets API_TOKEN to call the llm).
    for (const name of [c.key, ...dependsOn].flatMap((k) => COMPONENTS[k].tokenEnv)) {
      const value = options.tokens[name];
      if (value !== undefined) env[name] = value;
    }
    for (const dep of dependsOn) env[COMPONENTS[dep].urlEnv] = urlOf(dep);
    for (const { name, value } of spec?.env ?? []) env[name] = value;
    return {
      component: key,
      title: c.title,
      dir: c.dir,
      entry: join(options.servicesDir, c.dir, 'dist', 'main.js'),
      port: portOf(key, options.basePortOverride),
      url: urlOf(key),
      env,
      model,
      dependsOn,
      dataDir,
      logFile: join(options.home, 'logs', `${c.dir}.log`),
    };
  });
}
