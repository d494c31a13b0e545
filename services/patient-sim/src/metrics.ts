import type { KitMetrics } from '@clinicalsuite/kit';
import { registerLlmUpGauge, type LlmStatus } from '@clinicalsuite/kit/llm';
import { Counter, Gauge, Histogram } from 'prom-client';
import { FACT_CATEGORIES, FINDING_KINDS } from './schemas/case.js';

/** The patient simulator's own metrics (`patient_sim_` prefix). Labels never hold ids or text. */

export type TurnResult = 'ok' | 'upstream_error' | 'timeout' | 'aborted' | 'refused';
export type GuardAction = 'regenerated' | 'redacted' | 'replaced';

export interface PatientSimMetrics {
  readonly turns: Counter<'result'>;
  readonly turnDuration: Histogram;
  readonly llmDuration: Histogram;
  readonly overhead: Histogram;
  readonly llmRetries: Counter<'reason'>;
  readonly tokens: Counter<'kind'>;
  readonly revealed: Counter<'category'>;
  readonly leaks: Counter<'action'>;
  readonly sessionsCreated: Counter;
  readonly sessionsEnded: Counter<'reason'>;
}

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** What the simulator counts and times: turns, LLM calls and retries, revelations, sessions. */
export function createPatientSimMetrics(kit: KitMetrics): PatientSimMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  const turns = new Counter({
    name: `${p}turns_total`,
    help: 'Clinician messages answered or failed, by result (ok, upstream_error, timeout, aborted, refused).',
    labelNames: ['result'] as const,
    registers,
  });
  for (const result of ['ok', 'upstream_error', 'timeout', 'aborted', 'refused']) turns.inc({ result }, 0);
  const llmRetries = new Counter({
    name: `${p}llm_retries_total`,
    help: 'LLM calls attempted again after a connection failure or a 502/503/504, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  const tokens = new Counter({
    name: `${p}llm_tokens_total`,
    help: 'Tokens the LLM reported, by kind (prompt, completion).',
    labelNames: ['kind'] as const,
    registers,
  });
  for (const kind of ['prompt', 'completion']) tokens.inc({ kind }, 0);
  const revealed = new Counter({
    name: `${p}revealed_total`,
    help: 'Facts and findings revealed for the first time in a session, by category or finding kind.',
    labelNames: ['category'] as const,
    registers,
  });
  for (const category of [...FACT_CATEGORIES, ...FINDING_KINDS]) revealed.inc({ category }, 0);
  const leaks = new Counter({
    name: `${p}diagnosis_leaks_total`,
    help: 'Replies that named the hidden diagnosis, by what was sent instead (regenerated, redacted, replaced).',
    labelNames: ['action'] as const,
    registers,
  });
  for (const action of ['regenerated', 'redacted', 'replaced']) leaks.inc({ action }, 0);
  const sessionsEnded = new Counter({
    name: `${p}sessions_ended_total`,
    help: 'Sessions forgotten, by reason (expired, deleted).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of ['expired', 'deleted']) sessionsEnded.inc({ reason }, 0);
  return {
    turns,
    turnDuration: new Histogram({
      name: `${p}turn_duration_seconds`,
      help: 'Time to answer one clinician message, from admission to reply (LLM calls included).',
      buckets: SECONDS,
      registers,
    }),
    llmDuration: new Histogram({
      name: `${p}llm_request_duration_seconds`,
      help: 'Time in LLM calls per turn (retries, backoff and regenerations included).',
      buckets: SECONDS,
      registers,
    }),
    overhead: new Histogram({
      name: `${p}overhead_seconds`,
      help: 'Time per turn spent outside the LLM: disclosure, prompt, reply check, session bookkeeping.',
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers,
    }),
    llmRetries,
    tokens,
    revealed,
    leaks,
    sessionsCreated: new Counter({
      name: `${p}sessions_created_total`,
      help: 'Sessions started.',
      registers,
    }),
    sessionsEnded,
  };
}

/** What the simulator holds, read at each scrape: sessions, cases, and whether the LLM answers. */
export function registerPatientSimGauges(
  kit: KitMetrics,
  parts: {
    sessions: { readonly size: number };
    cases: { readonly size: number };
    monitor: { readonly status: LlmStatus };
  },
): void {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}sessions`,
    help: 'Conversations held in memory by this replica.',
    registers,
    collect() {
      this.set(parts.sessions.size);
    },
  });
  new Gauge({
    name: `${p}cases`,
    help: 'Case files loaded.',
    registers,
    collect() {
      this.set(parts.cases.size);
    },
  });
  registerLlmUpGauge(kit, parts.monitor);
}
