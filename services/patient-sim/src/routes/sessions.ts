import { defineRoute, NotFoundError, type AnyRoute } from '@clinicalsuite/kit';
import { SessionDeletedSchema, SessionParamsSchema, SessionSchema } from '../schemas/api.js';
import { categoryOf, findingResult, iso, liveSession, type PatientSimRuntime } from './runtime.js';

/** `GET` and `DELETE /sessions/{id}`: one conversation of this replica. */

function missing(id: string): NotFoundError {
  return new NotFoundError(
    `No session "${id}" (never started, expired or deleted, or held by another replica)`,
    {
      param: 'session_id',
    },
  );
}

export function getSessionRoute(rt: PatientSimRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/sessions/:session_id',
    summary: 'A conversation: transcript, revealed facts, released findings, token usage',
    tags: ['sessions'],
    params: SessionParamsSchema,
    response: SessionSchema,
    responses: { 404: { description: 'No such session (or it expired)' } },
    handler: ({ params }) => {
      const s = liveSession(rt, params.session_id);
      const p = s === undefined ? undefined : rt.cases.get(s.patientId);
      if (s === undefined || p === undefined) throw missing(params.session_id);
      const revealed = s.revealed.flatMap((id) => {
        const category = categoryOf(p.case, id);
        return category === undefined ? [] : [{ id, category }];
      });
      const released = new Set(s.revealed);
      return {
        session_id: s.id,
        patient_id: s.patientId,
        language: s.language,
        turns: s.turns.length,
        created_at: iso(s.createdAt),
        last_active_at: iso(s.lastActiveAt),
        expires_at: iso(rt.store.expiresAt(s, rt.now())),
        revealed,
        findings: p.case.findings.filter((f) => released.has(f.id)).map(findingResult),
        transcript: s.turns.map((t) => ({
          turn: t.turn,
          clinician: t.clinician,
          patient: t.patient,
          revealed: [...t.revealed],
          at: iso(t.at),
        })),
        usage: {
          prompt_tokens: s.usage.promptTokens,
          completion_tokens: s.usage.completionTokens,
          total_tokens: s.usage.promptTokens + s.usage.completionTokens,
        },
      };
    },
  });
}

export function deleteSessionRoute(rt: PatientSimRuntime): AnyRoute {
  return defineRoute({
    method: 'delete',
    path: '/sessions/:session_id',
    summary: 'Forget a conversation',
    tags: ['sessions'],
    params: SessionParamsSchema,
    response: SessionDeletedSchema,
    responses: { 404: { description: 'No such session (or it expired)' } },
    // Forgetting needs no LLM, and is not work to queue for.
    gated: false,
    requiresReady: false,
    handler: async ({ params }) =>
      // Waits for a turn in flight on the session, so it is not recorded into a deleted session.
      rt.mutex.run(params.session_id, () => {
        const s = liveSession(rt, params.session_id);
        if (s === undefined) throw missing(params.session_id);
        rt.store.delete(s.id);
        rt.metrics.sessionsEnded.inc({ reason: 'deleted' });
        return Promise.resolve({ deleted: true as const, session_id: s.id, turns: s.turns.length });
      }),
  });
}
