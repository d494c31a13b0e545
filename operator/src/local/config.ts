/** The local runner's own settings, read once from its environment. */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';

const ms = (fallback: number) => z.coerce.number().int().min(1).default(fallback);

const EnvSchema = z.object({
  CLINICALSUITE_HOME: z.string().min(1).optional(),
  CLINICALSUITE_SERVICES_DIR: z.string().min(1).optional(),
  /** Moves every port by the same offset: the llm gets this port, the others keep their distance. */
  CLINICALSUITE_BASE_PORT: z.coerce.number().int().min(1).max(65_000).optional(),
  /** First restart delay; doubles per crash up to 30 times it (1 s → 30 s by default). */
  CLINICALSUITE_RESTART_BACKOFF_MS: ms(1000),
  /** A process up this long has its backoff reset. */
  CLINICALSUITE_RESTART_RESET_MS: ms(60_000),
  /** Longest wait for a dependency to come up before starting a component anyway. */
  CLINICALSUITE_DEPENDENCY_WAIT_MS: ms(60_000),
  /** Time a service gets to exit after SIGTERM before it is killed. */
  CLINICALSUITE_STOP_TIMEOUT_MS: ms(10_000),
  CLINICALSUITE_HEALTH_INTERVAL_MS: ms(500),
  /** Retries of a model source after a transient failure (the model store's default when unset). */
  CLINICALSUITE_MODEL_RETRIES: z.coerce.number().int().min(0).max(20).optional(),
  LOG_LEVEL: z.string().min(1).optional(),
  PATH: z.string().optional(),
  HOME: z.string().optional(),
});

export interface RunnerConfig {
  readonly home: string;
  readonly servicesDir: string;
  readonly basePort: number | undefined;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number; readonly resetAfterMs: number };
  readonly dependencyWaitMs: number;
  readonly stopTimeoutMs: number;
  readonly healthIntervalMs: number;
  readonly modelRetries: number | undefined;
  /** What the services inherit from the runner's environment: nothing else. */
  readonly inherit: { readonly PATH?: string; readonly HOME?: string; readonly LOG_LEVEL?: string };
}

export function readConfig(env: NodeJS.ProcessEnv, repoRoot: string): RunnerConfig {
  const result = EnvSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(['invalid environment:', ...lines].join('\n'));
  }
  const e = result.data;
  const inherit: { PATH?: string; HOME?: string; LOG_LEVEL?: string } = {};
  if (e.PATH !== undefined) inherit.PATH = e.PATH;
  if (e.HOME !== undefined) inherit.HOME = e.HOME;
  if (e.LOG_LEVEL !== undefined) inherit.LOG_LEVEL = e.LOG_LEVEL;
  return {
    home: resolve(e.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite')),
    servicesDir: resolve(e.CLINICALSUITE_SERVICES_DIR ?? join(repoRoot, 'services')),
    basePort: e.CLINICALSUITE_BASE_PORT,
    backoff: {
      initialMs: e.CLINICALSUITE_RESTART_BACKOFF_MS,
      maxMs: Math.max(e.CLINICALSUITE_RESTART_BACKOFF_MS, 30 * e.CLINICALSUITE_RESTART_BACKOFF_MS),
      resetAfterMs: e.CLINICALSUITE_RESTART_RESET_MS,
    },
    dependencyWaitMs: e.CLINICALSUITE_DEPENDENCY_WAIT_MS,
    stopTimeoutMs: e.CLINICALSUITE_STOP_TIMEOUT_MS,
    healthIntervalMs: e.CLINICALSUITE_HEALTH_INTERVAL_MS,
    modelRetries: e.CLINICALSUITE_MODEL_RETRIES,
    inherit,
  };
}
