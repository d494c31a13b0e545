import { fixedTurnUseCase } from './fixed-turn.js';
import { faceAction, intentActions } from './intent-actions.js';
import { messageUseCase } from './message.js';
import { messageWithFileUseCase } from './message-with-file.js';
import type { UseCaseDeps } from './ports.js';
import { summaryUseCase } from './summary.js';
import { translationUseCase } from './translation.js';

export type { Call, Transport, UseCaseDeps } from './ports.js';

/** The agent's use cases on its adapters (app.ts); the routes call them. */
export function createUseCases(deps: UseCaseDeps) {
  const withActions = { ...deps, actions: intentActions(deps.subservices, deps.shell) };
  return {
    message: messageUseCase(withActions),
    messageWithFile: messageWithFileUseCase({ ...withActions, face: faceAction(deps.subservices) }),
    fixedTurn: fixedTurnUseCase(deps),
    translate: translationUseCase(deps),
    summarize: summaryUseCase(deps),
  };
}

export type AgentUseCases = ReturnType<typeof createUseCases>;
