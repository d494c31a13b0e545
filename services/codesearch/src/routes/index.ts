import type { AnyRoute } from '@clinicalsuite/kit';
import { codeRoute, codeTypesRoute } from './codes.js';
import { healthRoute, rootRoute, statusRoute } from './info.js';
import type { CodesearchRuntime } from './runtime.js';
import { searchRoute } from './search.js';

/** Every route of the code search service. */
export function codesearchRoutes(rt: CodesearchRuntime): AnyRoute[] {
  return [
    rootRoute(rt),
    healthRoute(rt),
    statusRoute(rt),
    searchRoute(rt),
    codeTypesRoute(rt),
    codeRoute(rt),
  ];
}

/** The service's title and description in its OpenAPI document. */
export const API_INFO = {
  title: 'Medical code search service',
  description:
    'ICD-10 (ICD-10-CM), ICD-10-PCS procedures and imported ICPC-2, CPT and service codes, searched by ' +
    'Vietnamese or English text: BM25 with diacritic folding and abbreviations, fused with embeddings.',
} as const;
