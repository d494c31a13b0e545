import type { AnyRoute } from '@clinicalsuite/kit';
import type { RoutesContext } from './context.js';
import { conversationRoutes } from './conversation.js';
import { agentHealthRoute, rootRoute } from './info.js';
import { openAiRoutes } from './openai.js';
import { pipelineRoutes } from './pipelines.js';
import { runMultipartRoute } from './run-multipart.js';
import { sessionRoutes } from './sessions.js';
import { shellRoute } from './shell.js';
import { capabilitiesRoute, statusRoute } from './status.js';
import { subserviceRoutes } from './subservices.js';

export type { RoutesContext } from './context.js';
export { API_INFO } from './info.js';
export { chatSocket, type ChatSocket, type ChatSocketOptions } from './ws.js';

/** Every HTTP route of the agent (`WS /ws/chat` is ws.ts, attached to the listening server). */
export function agentRoutes(ctx: RoutesContext): AnyRoute[] {
  return [
    rootRoute(ctx),
    agentHealthRoute(ctx),
    capabilitiesRoute(ctx),
    statusRoute(ctx),
    ...conversationRoutes(ctx),
    runMultipartRoute(ctx),
    ...openAiRoutes(ctx),
    ...subserviceRoutes(ctx),
    ...pipelineRoutes(ctx),
    shellRoute(ctx),
    ...sessionRoutes(ctx),
  ];
}
