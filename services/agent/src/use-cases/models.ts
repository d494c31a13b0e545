import type { UseCaseDeps } from './ports.js';

/** `/v1/models`: the three LLM identifiers, in OpenAI's list shape. */
export function modelsUseCase(deps: Pick<UseCaseDeps, 'upstreams' | 'startedAt'>) {
  return () => ({
    object: 'list' as const,
    data: deps.upstreams.ids.map((id) => ({
      id,
      object: 'model' as const,
      owned_by: 'local' as const,
      created: Math.floor(deps.startedAt / 1000),
    })),
  });
}
