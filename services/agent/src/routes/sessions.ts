import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import {
  DeletedSchema,
  SessionDetailSchema,
  SessionListSchema,
  SessionParamsSchema,
} from '../schemas/api.js';
import type { RoutesContext } from './context.js';

/** `GET /sessions`, `GET /sessions/{session_id}`, `DELETE /sessions/{session_id}` (404 when unknown). */
export function sessionRoutes({ useCases }: RoutesContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/sessions',
      summary: 'Active sessions of this replica, most recently used first',
      tags: ['sessions'],
      response: SessionListSchema,
      handler: () => useCases.sessions.list(),
    }),
    defineRoute({
      method: 'get',
      path: '/sessions/:session_id',
      summary: 'A session: its messages with role, content and timestamp',
      tags: ['sessions'],
      params: SessionParamsSchema,
      response: SessionDetailSchema,
      responses: { 404: { description: 'Unknown or expired session' } },
      handler: ({ params }) => useCases.sessions.get(params.session_id),
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
      handler: ({ params }) => useCases.sessions.delete(params.session_id),
    }),
  ];
}
