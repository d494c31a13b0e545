import type { ConcurrencyGate, Readiness } from '@clinicalsuite/kit';
import type { ChatBackend, LlmMonitor } from '@clinicalsuite/kit/llm';
import type { PatientSimConfig } from '../config.js';
import type { KeyedMutex, Session, SessionStore } from '../domain/sessions.js';
import type { PatientSimMetrics } from '../metrics.js';
import type { CaseFile, Finding } from '../schemas/case.js';

/** What the routes share. */

export interface PlayableCase {
  readonly case: CaseFile;
  readonly file: string;
  readonly origin: 'builtin' | 'user';
}

export interface PatientSimRuntime {
  readonly config: PatientSimConfig;
  readonly version: string;
  readonly cases: ReadonlyMap<string, PlayableCase>;
  readonly store: SessionStore;
  readonly mutex: KeyedMutex;
  readonly backend: ChatBackend;
  /** The LLM's state; `check()` probes it now (after a turn found it unreachable). */
  readonly monitor: Pick<LlmMonitor, 'status' | 'check'>;
  readonly llmUrl: string;
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly metrics: PatientSimMetrics;
  /** Epoch ms. */
  readonly now: () => number;
  readonly newSessionId: () => string;
  readonly startedAt: number;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function findingResult(f: Finding) {
  return {
    id: f.id,
    kind: f.kind,
    name: f.name,
    result: f.result,
    ...(f.value === undefined ? {} : { value: f.value }),
    ...(f.unit === undefined ? {} : { unit: f.unit }),
    ...(f.reference_range === undefined ? {} : { reference_range: f.reference_range }),
  };
}

/** The category of a revealed id (fact category or finding kind). */
export function categoryOf(c: CaseFile, id: string) {
  const fact = c.facts.find((f) => f.id === id);
  if (fact !== undefined) return fact.category;
  return c.findings.find((f) => f.id === id)?.kind;
}

/** The session, or undefined when absent or expired (counted). */
export function liveSession(rt: PatientSimRuntime, id: string): Session | undefined {
  return rt.store.get(id, rt.now(), () => rt.metrics.sessionsEnded.inc({ reason: 'expired' }));
}
