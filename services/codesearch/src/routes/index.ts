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
