import { randomUUID } from 'node:crypto';
import { createKit, createLogger, serviceAuth, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { LlmClient, LlmMonitor } from '@clinicalsuite/kit/llm';
import { readCases } from './adapters/case-files.js';
import { llmClientOptions, llmMonitorOptions } from './adapters/llm.js';
import type { PatientSimConfig } from './config.js';
import { KeyedMutex, SessionStore } from './domain/sessions.js';
import { createPatientSimMetrics, registerPatientSimGauges } from './metrics.js';
import { API_INFO, infoRoutes } from './routes/info.js';
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
 * configuration error), and builds the app; `serve(kit)` listens, then watches the LLM.
 */
export function buildPatientSimApp({ config, ...deps }: PatientSimDeps): PatientSimService {
  const now = deps.now ?? (() => Date.now());
  const cases = readCases(config);
  const kit = createKit({
    ...API_INFO,
    service: SERVICE,
    version: VERSION,
    config,
    // `patient_sim` names the metric prefix (`patient_sim_`); logs say `patient-sim`.
    logger: deps.logger ?? createLogger({ service: 'patient-sim', level: config.LOG_LEVEL }),
    gpuStatusPath: '/gpu_status',
    auth: serviceAuth(config, {
      scope: 'patient_sim',
      tokenEnv: 'PATIENT_SIM_API_TOKEN',
      token: config.PATIENT_SIM_API_TOKEN,
    }),
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const metrics = createPatientSimMetrics(kit.metrics);
  const ttlMs = config.PATIENT_SIM_SESSION_TTL_S * 1000;
  const sessions = new SessionStore(ttlMs, config.PATIENT_SIM_MAX_SESSIONS, config.PATIENT_SIM_MAX_TURNS);
  const llm = new LlmClient(llmClientOptions(config, kit.metrics, metrics.llmRetries));
  // The simulator is ready while the LLM answers: the monitor keeps a condition of its own.
  const readiness = kit.readiness.condition('starting: the LLM has not been checked yet');
  const monitor = new LlmMonitor(llmMonitorOptions(config, llm, { readiness, logger: kit.logger, now }));
  kit.background('the LLM monitor', monitor);
  kit.every('the session sweeper', Math.min(60_000, ttlMs), () => {
    for (const _ of sessions.sweep(now())) metrics.sessionsEnded.inc({ reason: 'expired' });
  });
  registerPatientSimGauges(kit.metrics, { sessions, cases, monitor });
  const rt: PatientSimRuntime = {
    config,
    version: VERSION,
    cases,
    store: sessions,
    mutex: new KeyedMutex(),
    backend: llm,
    monitor,
    llmUrl: llm.displayUrl,
    readiness: kit.readiness,
    gate: kit.gate,
    metrics,
    now,
    newSessionId: () => randomUUID(),
    startedAt: now(),
  };
  const app = kit.mount([
    ...infoRoutes(rt),
    listPatientsRoute(rt),
    getPatientRoute(rt),
    patientTurnRoute(rt),
    getSessionRoute(rt),
    deleteSessionRoute(rt),
  ]);
  return { kit: app, cases, sessions, monitor, llm, start: () => app.start(), close: () => app.close() };
}
