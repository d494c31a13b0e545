import { performance } from 'node:perf_hooks';
import {
  BadGatewayError,
  ConflictError,
  GatewayTimeoutError,
  HttpError,
  ServiceUnavailableError,
  defineRoute,
  type AnyRoute,
  type Logger,
} from '@clinicalsuite/kit';
import { EmptyReplyError, runTurn } from '../domain/turn.js';
import type { Session } from '../domain/sessions.js';
import type { CaseFile } from '../schemas/case.js';
import {
  PatientTurnRequestSchema,
  PatientTurnResponseSchema,
  type PatientTurnResponse,
} from '../schemas/api.js';
import type { TurnResult } from '../metrics.js';
import { unknownPatient } from './patients.js';
import { findingResult, liveSession, type PatientSimRuntime } from './runtime.js';

/**
 * `POST /patient`: one clinician message to a simulated patient. The session (given or new) is
 * locked for the turn; what the message reveals is recorded only when the reply is sent.
 */

export function patientTurnRoute(rt: PatientSimRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/patient',
    summary: 'Say something to a simulated patient; get their reply and what it revealed',
    description:
      'Starts a session when `session_id` is absent or unknown. The patient answers from the facts the ' +
      'session has asked about (matched by topic, in Vietnamese or English, with or without diacritics); ' +
      'examinations and tests the message asks for come back in `findings`. The diagnosis never reaches ' +
      'the model, and a reply that names it is regenerated or redacted (`guard`).',
    tags: ['patient'],
    body: PatientTurnRequestSchema(rt.config.PATIENT_SIM_MAX_MESSAGE_CHARS),
    response: PatientTurnResponseSchema,
    responses: {
      400: { description: "The body is not valid JSON, or the conversation does not fit the LLM's context" },
      404: { description: 'Unknown patient_id; the message lists the valid ids' },
      409: { description: 'The session belongs to another patient, or reached its turn limit' },
      413: { description: 'Body larger than BODY_LIMIT' },
      422: { description: 'Invalid body; lists the failing fields' },
      502: { description: 'The LLM failed or answered unusably' },
      503: { description: 'The LLM is unreachable or not ready, or the session capacity is reached' },
      504: { description: 'The LLM did not answer in time' },
    },
    // An unknown patient is a 404 whether or not the LLM is ready.
    requiresReady: 'in-handler',
    handler: async ({ body, signal, admittedAt, log, requireReady }): Promise<PatientTurnResponse> => {
      const playable = rt.cases.get(body.patient_id);
      if (playable === undefined) throw unknownPatient(rt, body.patient_id);
      requireReady();
      const c = playable.case;
      const sessionId = body.session_id ?? rt.newSessionId();
      return rt.mutex.run(sessionId, async () => {
        signal.throwIfAborted();
        let session: Session | undefined = liveSession(rt, sessionId);
        if (session !== undefined && session.patientId !== c.id) {
          throw new ConflictError(
            `Session "${sessionId}" is a conversation with patient "${session.patientId}", not "${c.id}": ` +
              'omit session_id (or use a new one) to talk to another patient',
            { param: 'session_id' },
          );
        }
        if (session !== undefined && session.turns.length >= rt.store.maxTurns) {
          throw new ConflictError(
            `Session "${sessionId}" reached its ${rt.store.maxTurns} turns: delete it or start a new one`,
            { param: 'session_id' },
          );
        }
        const newSession = session === undefined;
        if (session === undefined) {
          const created = rt.store.create(sessionId, c.id, c.language, rt.now());
          if (!created.ok) {
            throw new ServiceUnavailableError(
              `This replica holds its limit of ${rt.store.maxSessions} sessions: delete finished ones or wait ` +
                `until idle ones expire (${Math.round(rt.store.ttlMs / 1000)} s)`,
              60,
            );
          }
          session = created.session;
          rt.metrics.sessionsCreated.inc();
        }
        const s = session;
        // Not idle while the turn runs: neither expired by the sweeper nor dropped at capacity while
        // the LLM answers (the turn is recorded into it afterwards).
        rt.store.begin(s);
        try {
          return await answer(rt, c, s, newSession, body.message, signal, admittedAt, log);
        } finally {
          rt.store.end(s, rt.now());
        }
      });
    },
  });
}

/** One turn on a session the caller marked busy: the reply, recorded only once it is sent. */
async function answer(
  rt: PatientSimRuntime,
  c: CaseFile,
  s: Session,
  newSession: boolean,
  message: string,
  signal: AbortSignal,
  admittedAt: number,
  log: Logger,
): Promise<PatientTurnResponse> {
  let outcome: Awaited<ReturnType<typeof runTurn>>;
  try {
    outcome = await runTurn(
      rt.backend,
      {
        caseFile: c,
        revealed: new Set(s.revealed),
        history: s.turns,
        message,
        settings: {
          model: rt.monitor.status.model ?? rt.config.PATIENT_SIM_MODEL ?? 'default',
          temperature: rt.config.PATIENT_SIM_TEMPERATURE,
          maxTokens: rt.config.PATIENT_SIM_MAX_TOKENS,
          historyChars: rt.config.PATIENT_SIM_HISTORY_CHARS,
          leakRetries: rt.config.PATIENT_SIM_LEAK_RETRIES,
        },
      },
      signal,
    );
  } catch (error) {
    // A session this message started and that never got a reply is not kept.
    if (newSession) rt.store.delete(s.id);
    rt.metrics.turns.inc({ result: resultOf(error, signal) });
    if (error instanceof ServiceUnavailableError) void rt.monitor.check();
    if (error instanceof EmptyReplyError)
      throw new BadGatewayError(`${error.message} (tried ${1 + rt.config.PATIENT_SIM_LEAK_RETRIES} times)`);
    throw error;
  }
  const newIds = [...outcome.newFacts.map((f) => f.id), ...outcome.newFindings.map((f) => f.id)];
  const turn = rt.store.record(
    s,
    { clinician: message, patient: outcome.reply },
    newIds,
    outcome.usage,
    rt.now(),
  );
  const elapsed = performance.now() - admittedAt;
  rt.metrics.turns.inc({ result: 'ok' });
  rt.metrics.turnDuration.observe(elapsed / 1000);
  rt.metrics.llmDuration.observe(outcome.llmMs / 1000);
  rt.metrics.overhead.observe(Math.max(0, elapsed - outcome.llmMs) / 1000);
  rt.metrics.tokens.inc({ kind: 'prompt' }, outcome.usage.promptTokens);
  rt.metrics.tokens.inc({ kind: 'completion' }, outcome.usage.completionTokens);
  for (const f of outcome.newFacts) rt.metrics.revealed.inc({ category: f.category });
  for (const f of outcome.newFindings) rt.metrics.revealed.inc({ category: f.kind });
  if (outcome.guard !== 'none') {
    rt.metrics.leaks.inc({ action: outcome.guard });
    // Which case and what happened; never the text.
    log.warn({ patientId: c.id, guard: outcome.guard }, 'a reply named the diagnosis');
  }
  return {
    response: outcome.reply,
    patient_id: c.id,
    session_id: s.id,
    new_session: newSession,
    language: c.language,
    turn: turn.turn,
    revealed: [
      ...outcome.newFacts.map((f) => ({ id: f.id, category: f.category })),
      ...outcome.newFindings.map((f) => ({ id: f.id, category: f.kind })),
    ],
    findings: outcome.findings.map(findingResult),
    guard: outcome.guard,
    model: outcome.model,
    finish_reason: outcome.finishReason,
    usage: {
      prompt_tokens: outcome.usage.promptTokens,
      completion_tokens: outcome.usage.completionTokens,
      total_tokens: outcome.usage.promptTokens + outcome.usage.completionTokens,
    },
    processing_time_ms: Math.round(elapsed * 100) / 100,
    llm_time_ms: Math.round(outcome.llmMs * 100) / 100,
  };
}

function resultOf(error: unknown, signal: AbortSignal): TurnResult {
  if (error instanceof GatewayTimeoutError) return 'timeout';
  if (signal.aborted) return 'aborted';
  if (error instanceof HttpError && error.status < 500) return 'refused';
  return 'upstream_error';
}
