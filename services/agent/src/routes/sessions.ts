import { NotFoundError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import type { Session } from '../domain/sessions.js';
import {
  DeletedSchema,
  SessionDetailSchema,
  SessionListSchema,
  SessionParamsSchema,
} from '../schemas/api.js';
import type { AgentRuntime } from './runtime.js';

/** `GET /sessions`, `GET /sessions/{session_id}`, `DELETE /sessions/{session_id}` (404 when unknown). */

const iso = (ms: number): string => new Date(ms).toISOString();

function summary(rt: AgentRuntime, s: Session) {
  return {
    session_id: s.id,
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    expires_at: iso(s.updatedAt + rt.config.AGENT_SESSION_TTL_S * 1000),
    message_count: s.messages.length,
    last_intent: s.lastIntent,
    last_model: s.lastModel,
  };
}

export function sessionRoutes(rt: AgentRuntime): AnyRoute[] {
  const notFound = (id: string) =>
    new NotFoundError(`Session ${JSON.stringify(id)} does not exist (or expired)`, { param: 'session_id' });
  return [
    defineRoute({
      method: 'get',
      path: '/sessions',
      summary: 'Active sessions of this replica, most recently used first',
      tags: ['sessions'],
      response: SessionListSchema,
      handler: () => {
        const sessions = rt.sessions.list(rt.now());
        return {
          sessions: sessions.map((s) => summary(rt, s)),
          total: sessions.length,
          ttl_seconds: rt.config.AGENT_SESSION_TTL_S,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/sessions/:session_id',
      summary: 'A session: its messages with role, content and timestamp',
      tags: ['sessions'],
      params: SessionParamsSchema,
      response: SessionDetailSchema,
      responses: { 404: { description: 'Unknown or expired session' } },
      handler: ({ params }) => {
        const s = rt.sessions.get(params.session_id, rt.now());
        if (s === undefined) throw notFound(params.session_id);
        return {
          ...summary(rt, s),
          messages: s.messages.map((m) => ({
            role: m.role,
            content: m.content,
            timestamp: iso(m.timestamp),
            ...(m.intent === undefined ? {} : { intent: m.intent }),
            ...(m.model === undefined ? {} : { model: m.model }),
          })),
        };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/sessions/:session_id',
      summary: 'Delete a session',
      tags: ['sessions'],
      params: SessionParamsSchema,
      response: DeletedSchema,
      gated: false,
      requiresReady: false,
      responses: { 404: { description: 'Unknown or expired session' } },
      handler: ({ params }) => {
        const live = rt.sessions.get(params.session_id, rt.now()) !== undefined;
        if (!live || !rt.sessions.delete(params.session_id)) throw notFound(params.session_id);
        rt.metrics.sessionsEnded.inc({ reason: 'deleted' });
        return { deleted: params.session_id };
      },
    }),
  ];
}
