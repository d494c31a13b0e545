import type { AnyRoute } from '@clinicalsuite/kit';
import {
  deletePersonRoute,
  gpuStatusRoute,
  healthRoute,
  listPersonsRoute,
  rootRoute,
  statusRoute,
} from './info.js';
import { recognizeBatchRoute, recognizeFacesRoute } from './recognize.js';
import { registerBatchRoute, registerPersonRoute } from './register.js';
import type { FaceRuntime } from './runtime.js';
import { recognizeVideoRoute } from './video.js';

/** Every route of the face service, in the order the documentation lists them. */
export function faceRoutes(rt: FaceRuntime): AnyRoute[] {
  return [
    rootRoute(rt),
    healthRoute(rt),
    statusRoute(rt),
    gpuStatusRoute(rt),
    listPersonsRoute(rt),
    deletePersonRoute(rt),
    registerPersonRoute(rt),
    registerBatchRoute(rt),
    recognizeFacesRoute(rt),
    recognizeBatchRoute(rt),
    recognizeVideoRoute(rt),
  ];
}
