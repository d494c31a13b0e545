import type { Request } from 'express';
import type { z } from 'zod';
import type { Readiness } from '../readiness.js';
import type { AnyRoute } from './route.js';

export interface HealthRouteOptions<S extends z.ZodType> {
  readonly readiness: Readiness;
  /**
   * The service's health body (its spec fields); `ready` says which state it describes; `req` gives
   * e.g. the port the request came in on.
   */
  readonly body: (ready: boolean, reason: string | undefined, req: Request) => z.input<S>;
  readonly schema: S;
  readonly path?: string;
  /** `false` serves it without a token (the agent); the text LLM's spec wants one. */
  readonly auth?: boolean;
}

/** `GET /health`: 200 with the service's body when ready, 503 with the same shape otherwise. */
export function healthRoute<S extends z.ZodType>(options: HealthRouteOptions<S>): AnyRoute {
  return {
    method: 'get',
    path: options.path ?? '/health',
    summary: 'Health: 200 when ready, 503 until then',
    tags: ['probes'],
    response: options.schema,
    responses: {
      503: { description: 'Not ready yet (model loading) or shutting down', schema: options.schema },
    },
    ...(options.auth === undefined ? {} : { auth: options.auth }),
    handler: ({ req, res }) => {
      const { ready, reason } = options.readiness;
      res.status(ready ? 200 : 503);
      return options.body(ready, reason, req);
    },
  };
}
