/**
 * What the local runner runs, as data: one process spec per enabled component, in start order.
 * Pure: a function of the parsed suite, the catalogue and the options (no env, no clock, no I/O).
 * The service contract (model, env) is shared with the operator's builders: ../plan/service-env.ts.
 */
import { join } from 'node:path';
import {
  COMPONENTS,
  dependencyOrder,
  effectiveDependsOn,
  type ComponentKey,
  type Suite,
} from '../api/v1alpha1/index.js';
import {
  planExtraModels,
  planModel,
  planProjector,
  serviceEnv,
  storeEnvFor,
  type ModelFiles,
  type PlannedModel,
} from '../plan/service-env.js';

export { sourceBaseName, type PlannedModel } from '../plan/service-env.js';

export const LOCAL_HOST = '127.0.0.1';
const FIRST_PORT = COMPONENTS.llm.port;

export interface PlanOptions {
  /** `$CLINICALSUITE_HOME`: models, data, logs and tokens live under it. */
  readonly home: string;
  /** Directory holding `<dir>/dist/main.js` per component. */
  readonly servicesDir: string;
  /**
   * Token values by env var name (API_TOKEN, AI_AGENT_API_TOKEN, TASK_AGENT_API_TOKEN) and the task
   * proxy's first user (TASK_PROXY_USER, TASK_PROXY_PASSWORD): each service gets those it needs.
   */
  readonly tokens: Readonly<Record<string, string>>;
  /** Port of the llm; every other port keeps its distance to it. Default: the catalogue ports. */
  readonly basePortOverride?: number | undefined;
  /** The only variables of the runner's environment passed on. */
  readonly inherit?: { readonly PATH?: string; readonly HOME?: string; readonly LOG_LEVEL?: string };
  /** Model files by manifest id, relative to the models directory (the kit's MODEL_MANIFEST fits). */
  readonly manifest?: ModelFiles;
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
  /**
   * Further files the service loads from the models directory, fetched after `model`: its
   * multimodal projector (the spec's `model.projector`) first, then the catalogue's extra models.
   */
  readonly extraModels: readonly PlannedModel[];
  readonly dependsOn: readonly ComponentKey[];
  readonly dataDir: string;
  readonly logFile: string;
}

export function portOf(key: ComponentKey, basePortOverride?: number): number {
  const port = COMPONENTS[key].port;
  return basePortOverride === undefined ? port : basePortOverride + (port - FIRST_PORT);
}

export function planLocal(suite: Suite, options: PlanOptions): ProcessSpec[] {
  const { services } = suite.spec;
  const modelsDir = join(options.home, 'models');
  const urlOf = (key: ComponentKey) => `http://${LOCAL_HOST}:${portOf(key, options.basePortOverride)}`;
  const dataDirOf = (key: ComponentKey) => join(options.home, 'data', COMPONENTS[key].dir);
  /** A process's working directory: its service directory (the runner starts it there). */
  const cwdOf = (key: ComponentKey) => join(options.servicesDir, COMPONENTS[key].dir);
  const modelOf = (key: ComponentKey) => planModel(suite, key, modelsDir, options.manifest, join);
  const projectorOf = (key: ComponentKey) => planProjector(suite, key, modelsDir, join);
  const envOf = (key: ComponentKey): Record<string, string> => {
    const owner = COMPONENTS[key].readsStoreOf;
    const inherited: Record<string, string> = {};
    if (options.inherit?.PATH !== undefined) inherited['PATH'] = options.inherit.PATH;
    if (options.inherit?.HOME !== undefined) inherited['HOME'] = options.inherit.HOME;
    return {
      ...inherited,
      ...serviceEnv({
        suite,
        key,
        port: portOf(key, options.basePortOverride),
        host: LOCAL_HOST,
        runtime: {
          LOG_LEVEL: options.inherit?.LOG_LEVEL ?? 'info',
          CLINICALSUITE_HOME: options.home,
          // The kit exits when its parent goes away, so a runner killed with SIGKILL leaves no orphans.
          EXIT_WITH_PARENT: 'true',
          ...COMPONENTS[key].localEnv,
        },
        modelsDir,
        dataDir: dataDirOf(key),
        model: modelOf(key),
        projector: projectorOf(key),
        urlOf,
        tokens: options.tokens,
        // The store outlives its process: the task proxy reads the task agent's file (or database)
        // while the agent is down or disabled, so it comes from the owner's env either way.
        ...(owner === undefined || owner === key
          ? {}
          : { storeEnv: storeEnvFor(owner, envOf(owner), cwdOf(owner), join) }),
      }),
    };
  };
  return dependencyOrder(services).map((key): ProcessSpec => {
    const c = COMPONENTS[key];
    const projector = projectorOf(key);
    return {
      component: key,
      title: c.title,
      dir: c.dir,
      entry: join(cwdOf(key), c.entry),
      port: portOf(key, options.basePortOverride),
      url: urlOf(key),
      env: envOf(key),
      model: modelOf(key),
      extraModels: [
        ...(projector === null ? [] : [projector]),
        ...planExtraModels(suite, key, modelsDir, options.manifest, join),
      ],
      dependsOn: effectiveDependsOn(services, key),
      dataDir: dataDirOf(key),
      logFile: join(options.home, 'logs', `${c.dir}.log`),
    };
  });
}
