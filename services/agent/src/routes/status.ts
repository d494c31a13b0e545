import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { CapabilitiesResponseSchema, StatusResponseSchema } from '../schemas/subservices.js';
import type { RoutesContext } from './context.js';

/**
 * `GET /status` (token required): every sub-service's `/health` and the three LLM upstreams' probes,
 * all in parallel, each within AGENT_STATUS_TIMEOUT_MS, with the state and latency of each; plus
 * sessions and the concurrency gate. Always 200: it is a report (GET /health is the probe).
 *
 * `GET /capabilities` (no token): what the agent can do: the three LLMs, the six sub-services, the
 * four pipelines and the shell; no URLs and no health (use-cases/capabilities.ts).
 */

export function statusRoute({ useCases }: RoutesContext): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Checks every sub-service and the three LLMs in parallel: state and latency of each',
    description:
      'Each sub-service (stt, ocr, tts, codesearch, patient_sim, face) is asked for its /health and each LLM ' +
      'upstream (alpha4_service, beta3_service, beta_service) probed, in parallel, each within ' +
      'AGENT_STATUS_TIMEOUT_MS. States: `up`; `not_ready` (it answered 503, with its reason); `down` ' +
      '(unreachable, no answer in time, another status); `not_configured` (its URL unset: not counted against ' +
      '`status`); LLMs also `unauthorized`, and `cooling_down` while the router skips one after failures. ' +
      '`status`: `ok` when every LLM (not cooling down) and every configured sub-service is up, `degraded` ' +
      'when an LLM is up but something else is not, `down` when no LLM is up. Always 200.',
    tags: ['info'],
    response: StatusResponseSchema,
    handler: ({ signal }) => useCases.status.report(signal),
  });
}

export function capabilitiesRoute({ useCases }: RoutesContext): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/capabilities',
    summary: 'What the agent can do: LLMs, sub-services, pipelines, shell (no token needed)',
    description:
      'Each entry: `id`, `name`, `description`, `tags`, `gpu` (runs on a GPU in the suite’s default ' +
      'deployment; a pipeline when one of its steps does), `kind` (llm, subservice, pipeline, feature), ' +
      '`endpoints` (the agent’s endpoints that use it) and `available` (configured; health is /status).',
    tags: ['info'],
    auth: false,
    response: CapabilitiesResponseSchema,
    handler: () => useCases.capabilities(),
  });
}
