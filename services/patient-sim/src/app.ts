import { randomUUID } from 'node:crypto';
import { createKit, createLogger, serviceAuth, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { LlmClient, LlmMonitor } from '@clinicalsuite/kit/llm';
import { readCases } from './adapters/case-files.js';
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
  /** Starts watching the LLM (readiness) and sweeping expired sessions (`serve()` does, once listening). */
  start(): void;
  close(): Promise<void>;
}

/**
 * Reads and validates every case file (a bad one stops the start with every problem listed, as a
 * configuration error), and builds the app. Not listening, not probing the LLM until started.
 */
export function buildPatientSimApp(deps: PatientSimDeps): PatientSimService {
  const { config } = deps;
  const now = deps.now ?? (() => Date.now());
  const cases = readCases(config);
  const auth = serviceAuth(config, {
    scope: 'patient_sim',
    tokenEnv: 'PATIENT_SIM_API_TOKEN',
    token: config.PATIENT_SIM_API_TOKEN,
  });
  const kit = createKit({
    service: SERVICE,
    title: 'ClinicalSuite patient simulator',
    version: VERSION,
    description:
      'An LLM plays a patient from a case file: stays in character, reveals history only when asked and ' +
      'examination and test results only when examined or ordered, keeps per-session state in memory.',
    config,
    // `patient_sim` names the metric prefix (`patient_sim_`); logs say `patient-sim`.
    logger: deps.logger ?? createLogger({ service: 'patient-sim', level: config.LOG_LEVEL }),
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.gpu === undefined ? {} : { gpu: deps.gpu }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
  });
  const sessions = new SessionStore(
    config.PATIENT_SIM_SESSION_TTL_S * 1000,
    config.PATIENT_SIM_MAX_SESSIONS,
    config.PATIENT_SIM_MAX_TURNS,
  );
  const llm = new LlmClient({
    baseUrl: config.LLM_URL,
    metrics: kit.metrics,
    ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
    timeoutMs: config.PATIENT_SIM_LLM_TIMEOUT_MS,
    retries: config.PATIENT_SIM_LLM_RETRIES,
    backoffMs: config.PATIENT_SIM_LLM_BACKOFF_MS,
    onRetry: (reason) => metrics.llmRetries.inc({ reason }),
  });
  // The simulator is ready while the LLM answers: the monitor keeps a condition of its own.
  const monitor = new LlmMonitor({
    client: llm,
    readiness: kit.readiness.condition('starting: the LLM has not been checked yet'),
    logger: kit.logger,
    intervalMs: config.PATIENT_SIM_LLM_PROBE_MS,
    configuredModel: config.PATIENT_SIM_MODEL,
    modelEnv: 'PATIENT_SIM_MODEL',
    now,
  });
  kit.resource({
    name: 'the LLM monitor',
    open: () => {
      monitor.start();
      return monitor;
    },
    close: (m) => m.stop(),
  });
  const metrics = createPatientSimMetrics(kit.metrics, {
    sessions: () => sessions.size,
    llmUp: () => monitor.status.state === 'up',
    cases: () => cases.size,
  });
  kit.resource({
    name: 'the session sweeper',
    open: () =>
      setInterval(
        () => {
          for (const _ of sessions.sweep(now())) metrics.sessionsEnded.inc({ reason: 'expired' });
        },
        Math.min(60_000, config.PATIENT_SIM_SESSION_TTL_S * 1000),
      ).unref(),
    close: (sweeper) => clearInterval(sweeper),
  });
  const rt: PatientSimRuntime = {
    config,
    version: VERSION,
    cases,
    store: sessions,
    mutex: new KeyedMutex(),
    backend: llm,
    llm: () => monitor.status,
    llmUrl: llm.displayUrl,
    recheckLlm: () => void monitor.check(),
    readiness: kit.readiness,
    gate: kit.gate,
    metrics,
    now,
    newSessionId: () => randomUUID(),
    startedAt: now(),
  };
  const app = kit.mount([
    rootRoute(rt),
    healthRouteFor(rt),
    statusRoute(rt),
    listPatientsRoute(rt),
    getPatientRoute(rt),
    patientTurnRoute(rt),
    getSessionRoute(rt),
    deleteSessionRoute(rt),
  ]);
  return { kit: app, cases, sessions, monitor, llm, start: () => app.start(), close: () => app.close() };
}
