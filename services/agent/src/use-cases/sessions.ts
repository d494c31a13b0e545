import { NotFoundError } from '@clinicalsuite/kit';
import type { Session } from '../domain/sessions.js';
import type { UseCaseDeps } from './ports.js';

/** The sessions of this replica: listed, one read with its messages, one deleted (404 when unknown). */

const iso = (ms: number): string => new Date(ms).toISOString();

export function sessionsUseCase(deps: Pick<UseCaseDeps, 'config' | 'sessions' | 'metrics' | 'now'>) {
  const { config, sessions } = deps;
  const summary = (s: Session) => ({
    session_id: s.id,
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    expires_at: iso(s.updatedAt + config.AGENT_SESSION_TTL_S * 1000),
    message_count: s.messages.length,
    last_intent: s.lastIntent,
    last_model: s.lastModel,
  });
  const notFound = (id: string) =>
    new NotFoundError(`Session ${JSON.stringify(id)} does not exist (or expired)`, { param: 'session_id' });
  return {
    /** Most recently used first. */
    list: () => {
      const all = sessions.list(deps.now());
      return { sessions: all.map(summary), total: all.length, ttl_seconds: config.AGENT_SESSION_TTL_S };
    },
    get: (id: string) => {
      const s = sessions.get(id, deps.now());
      if (s === undefined) throw notFound(id);
      return {
        ...summary(s),
        messages: s.messages.map((m) => ({
          role: m.role,
          content: m.content,
          timestamp: iso(m.timestamp),
          ...(m.intent === undefined ? {} : { intent: m.intent }),
          ...(m.model === undefined ? {} : { model: m.model }),
        })),
      };
    },
    delete: (id: string) => {
      const live = sessions.get(id, deps.now()) !== undefined;
      if (!live || !sessions.delete(id)) throw notFound(id);
      deps.metrics.sessionsEnded.inc({ reason: 'deleted' });
      return { deleted: id };
    },
  };
}
