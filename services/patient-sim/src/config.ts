import { fileURLToPath } from 'node:url';
import { ConfigError, env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { z } from 'zod';

/**
 * The patient simulator's configuration: the kit's variables and the simulator's own. Parsed once,
 * at start-up; a missing LLM_URL or a bad value stops the service with a message naming it.
 */

export const patientSimConfigSchema = kitConfigSchema({
  port: 8015,
  maxConcurrency: 8,
  queueSize: 64,
  queueTimeoutMs: 120_000,
  requestTimeoutMs: 180_000,
  bodyLimit: '64kb',
}).extend({
  /** The token that callers present (scope `patient_sim`); AUTH_TOKENS_FILE may add more. */
  PATIENT_SIM_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Base URL of the suite's text LLM (OpenAI-compatible); the runner and the operator set it. */
  LLM_URL: env.url(),
  /** Bearer token for the LLM (the suite's API_TOKEN). */
  API_TOKEN: z.string().optional(),
  /** Model name sent to the LLM; default: the first model its /v1/models lists. */
  PATIENT_SIM_MODEL: z.string().min(1).optional(),
  /** Sampling temperature of the patient's replies. */
  PATIENT_SIM_TEMPERATURE: env.number({ min: 0, max: 2 }).default(0.7),
  /** Tokens at most per reply. */
  PATIENT_SIM_MAX_TOKENS: env.int({ min: 1, max: 8192 }).default(200),
  /** Characters of earlier conversation sent with each turn (oldest exchanges dropped first). */
  PATIENT_SIM_HISTORY_CHARS: env.int({ min: 0, max: 1_000_000 }).default(6000),
  /** Longest clinician message, in characters. */
  PATIENT_SIM_MAX_MESSAGE_CHARS: env.int({ min: 1, max: 100_000 }).default(4000),
  /** Deadline of one LLM call, in ms. */
  PATIENT_SIM_LLM_TIMEOUT_MS: env.ms({ min: 100 }).default(120_000),
  /** Further attempts after a connection error or a 502/503/504 from the LLM. */
  PATIENT_SIM_LLM_RETRIES: env.int({ min: 0, max: 10 }).default(2),
  /** First backoff between attempts, doubled each time (with jitter). */
  PATIENT_SIM_LLM_BACKOFF_MS: env.int({ min: 0, max: 60_000 }).default(250),
  /** How often the LLM's health is checked (readiness). */
  PATIENT_SIM_LLM_PROBE_MS: env.int({ min: 10, max: 600_000 }).default(5000),
  /** Regenerations after a reply named the diagnosis, before it is redacted. */
  PATIENT_SIM_LEAK_RETRIES: env.int({ min: 0, max: 5 }).default(1),
  /** A session idle this long is forgotten. */
  PATIENT_SIM_SESSION_TTL_S: env.int({ min: 1, max: 30 * 86_400 }).default(3600),
  /** Sessions held at once (per replica); a new one past it is refused with 503. */
  PATIENT_SIM_MAX_SESSIONS: env.int({ min: 1, max: 1_000_000 }).default(1000),
  /** Turns per session; past it the session must be deleted or a new one started. */
  PATIENT_SIM_MAX_TURNS: env.int({ min: 1, max: 10_000 }).default(200),
  /** A directory of further case files (*.json), validated at start-up. */
  PATIENT_CASES_DIR: z.string().min(1).optional(),
  /** Load the cases shipped with the service (services/patient-sim/cases). */
  PATIENT_SIM_BUILTIN_CASES: env.bool().default(true),
});

export type PatientSimConfig = z.output<typeof patientSimConfigSchema> & {
  /** The shipped cases' directory. */
  readonly builtinCasesDir: string;
};

type Env = Readonly<Record<string, string | undefined>>;

/** The shipped cases, beside `src/` and `dist/` alike. */
export const BUILTIN_CASES_DIR = fileURLToPath(new URL('../cases/', import.meta.url));

export function loadPatientSimConfig(source: Env = process.env): PatientSimConfig {
  const config = loadConfig(patientSimConfigSchema, source);
  if (!config.PATIENT_SIM_BUILTIN_CASES && config.PATIENT_CASES_DIR === undefined) {
    throw new ConfigError([
      'PATIENT_CASES_DIR: is required when PATIENT_SIM_BUILTIN_CASES is false (there would be no case to play)',
    ]);
  }
  return { ...config, builtinCasesDir: BUILTIN_CASES_DIR };
}
