import { defineRoute, NotFoundError, type AnyRoute } from '@clinicalsuite/kit';
import { codeDetail } from '../domain/results.js';
import { CodeDetailSchema, CodeParamsSchema, CodeTypesResponseSchema } from '../schemas/api.js';
import { CODE_TYPES } from '../schemas/code-record.js';
import { requireSnapshot, unavailableHint, vectorStatus, type CodesearchRuntime } from './runtime.js';

export function codeTypesRoute(rt: CodesearchRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/code_types',
    summary: 'The loaded code types: counts, sources, licences, embedding state; and the missing ones',
    tags: ['codes'],
    requiresReady: true,
    response: CodeTypesResponseSchema,
    handler: () => {
      const snap = requireSnapshot(rt);
      const types = [...snap.sets.values()].map((meta) => {
        const range = snap.index.typeRanges.get(meta.type) ?? [0, 0];
        let curated = 0;
        for (let d = range[0]; d < range[1]; d++)
          if (snap.index.docs[d]?.titleViSource === 'curated') curated++;
        return { ...meta, curated_vi_titles: curated, vectors: vectorStatus(snap.vectors.get(meta.type)) };
      });
      const embedder = rt.catalog.model;
      return {
        types,
        missing_types: CODE_TYPES.filter((t) => !snap.sets.has(t)),
        damaged_types: [...snap.damaged.values()].map((d) => ({
          type: d.type,
          file: d.file,
          problem: d.problem,
          hint: unavailableHint(snap, d.type),
        })),
        abbreviations: rt.abbreviations.size,
        embedding_model: {
          loaded: embedder !== undefined,
          id: embedder?.id ?? null,
          reason: embedder === undefined ? rt.catalog.modelReason : null,
        },
      };
    },
  });
}

export function codeRoute(rt: CodesearchRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/codes/:type/:code',
    summary: 'One code: titles, synonyms, parent, ancestors and children',
    tags: ['codes'],
    requiresReady: true,
    params: CodeParamsSchema,
    response: CodeDetailSchema,
    responses: { 404: { description: 'No such code of that type (or no codes of that type loaded)' } },
    handler: ({ params }) => {
      const snap = requireSnapshot(rt);
      if (!snap.index.typeRanges.has(params.type))
        throw new NotFoundError(unavailableHint(snap, params.type));
      const detail = codeDetail(snap.index, params.type, params.code);
      if (detail === null) throw new NotFoundError(`No ${params.type} code ${params.code}`);
      return { ...detail, source: snap.sets.get(params.type)?.source ?? '' };
    },
  });
}
