import { randomUUID } from 'node:crypto';
import {
  ConfigError,
  Readiness,
  serviceAuth,
  buildApp,
  createLogger,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { CaseFileError, loadCases } from './adapters/case-files.js';
import { LlmClient, LlmMonitor, type ChatBackend } from '@clinicalsuite/kit/llm';
import type { PatientSimConfig } from './config.js';
import { KeyedMutex, SessionStore } from './domain/sessions.js';
import { createPatientSimMetrics } from './metrics.js';
import { healthRouteFor, rootRoute, statusRoute } from './routes/info.js';
import { patientTurnRoute } from './routes/patient.js';
import { getPatientRoute, listPatientsRoute } from './routes/patients.js';
import type { PatientSimRuntime, PlayableCase } from './routes/runtime.js';
import { deleteSessionRoute, getSessionRoute } from './routes/sessions.js';

export const SERVICE = 'patient_sim';
export const VERSION = '0.1.0';

export interface PatientSimDeps {
  readonly config: PatientSimConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  /** Epoch ms (sessions' TTL and timestamps). */
  readonly now?: () => number;
  readonly processMetrics?: boolean;
}

export interface PatientSimService {
  readonly kit: KitApp;
  readonly cases: ReadonlyMap<string, PlayableCase>;
  readonly sessions: SessionStore;
  readonly monitor: LlmMonitor;
  readonly llm: LlmClient;
  /** Starts watching the LLM (readiness) and sweeping expired sessions; call after listening. */
  start(): void;
  close(): void;
}

/**
 * Reads and validates every case file (a bad one stops the start with every problem listed, as a
 * configuration error), and builds the app. Not listening, not probing the LLM until `start()`.
 */
export function buildPatientSimApp(deps: PatientSimDeps): PatientSimService {
  const { config } = deps;
  // `patient_sim` names the metric prefix (`patient_sim_`); logs say `patient-sim`.
  const logger = deps.logger ?? createLogger({ service: 'patient-sim', level: config.LOG_LEVEL });
  const now = deps.now ?? (() => Date.now());
  const cases = readCases(config);
  const readiness = new Readiness('starting: the LLM has not been checked yet');
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  const sessions = new SessionStore(
    config.PATIENT_SIM_SESSION_TTL_S * 1000,
    config.PATIENT_SIM_MAX_SESSIONS,
    config.PATIENT_SIM_MAX_TURNS,
  );
  let onRetry: (reason: string) => void = () => undefined;
  const llm = new LlmClient({
    baseUrl: config.LLM_URL,
    ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
    timeoutMs: config.PATIENT_SIM_LLM_TIMEOUT_MS,
    retries: config.PATIENT_SIM_LLM_RETRIES,
    backoffMs: config.PATIENT_SIM_LLM_BACKOFF_MS,
    onRetry: (reason) => onRetry(reason),
  });
  const monitor = new LlmMonitor({
    client: llm,
    readiness,
    logger,
    intervalMs: config.PATIENT_SIM_LLM_PROBE_MS,
    configuredModel: config.PATIENT_SIM_MODEL,
    modelEnv: 'PATIENT_SIM_MODEL',
    now,
  });
  const auth = serviceAuth(config, {
    scope: 'patient_sim',
    tokenEnv: 'PATIENT_SIM_API_TOKEN',
    token: config.PATIENT_SIM_API_TOKEN,
  });
  const backend: ChatBackend = llm;
  const startedAt = now();
  let sweepEvery: () => void = () => undefined;
  const kit = buildApp({
    service: SERVICE,
    title: 'ClinicalSuite patient simulator',
    version: VERSION,
    description:
      'An LLM plays a patient from a case file: stays in character, reveals history only when asked and ' +
      'examination and test results only when examined or ordered, keeps per-session state in memory.',
    config,
    logger,
    readiness,
    gpu,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics: kitMetrics }) => {
      const metrics = createPatientSimMetrics(kitMetrics, {
        sessions: () => sessions.size,
        llmUp: () => monitor.status.state === 'up',
        cases: () => cases.size,
      });
      onRetry = (reason) => metrics.llmRetries.inc({ reason });
      const rt: PatientSimRuntime = {
        config,
        version: VERSION,
        cases,
        store: sessions,
        mutex: new KeyedMutex(),
        backend,
        llm: () => monitor.status,
        llmUrl: llm.displayUrl,
        recheckLlm: () => void monitor.check(),
        readiness,
        gate,
        metrics,
        now,
        newSessionId: () => randomUUID(),
        startedAt,
      };
      sweepEvery = () => {
        for (const _ of sessions.sweep(now())) metrics.sessionsEnded.inc({ reason: 'expired' });
      };
      return [
        rootRoute(rt),
        healthRouteFor(rt),
        statusRoute(rt),
        listPatientsRoute(rt),
        getPatientRoute(rt),
        patientTurnRoute(rt),
        getSessionRoute(rt),
        deleteSessionRoute(rt),
      ];
    },
  });
  let sweeper: NodeJS.Timeout | undefined;
  return {
    kit,
    cases,
    sessions,
    monitor,
    llm,
    start: () => {
      monitor.start();
      sweeper = setInterval(sweepEvery, Math.min(60_000, config.PATIENT_SIM_SESSION_TTL_S * 1000));
      sweeper.unref();
    },
    close: () => {
      monitor.stop();
      if (sweeper !== undefined) clearInterval(sweeper);
    },
  };
}

function readCases(config: PatientSimConfig): ReadonlyMap<string, PlayableCase> {
  const dirs = [
    ...(config.PATIENT_SIM_BUILTIN_CASES ? [config.builtinCasesDir] : []),
    ...(config.PATIENT_CASES_DIR === undefined ? [] : [config.PATIENT_CASES_DIR]),
  ];
  try {
    const loaded = loadCases(dirs);
    return new Map(
      [...loaded].map(([id, l]) => [
        id,
        {
          case: l.case,
          file: l.file,
          origin:
            l.file.startsWith(config.builtinCasesDir) && config.PATIENT_SIM_BUILTIN_CASES
              ? 'builtin'
              : 'user',
        },
      ]),
    );
  } catch (error) {
    // A bad case file is a configuration error: the start stops with every problem named.
    if (error instanceof CaseFileError)
      throw new ConfigError(error.problems.map((p) => `PATIENT_CASES_DIR / case file ${p}`));
    throw error;
  }
}
