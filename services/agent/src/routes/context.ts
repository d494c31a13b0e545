import type { Readiness } from '@clinicalsuite/kit';
import type { AgentConfig } from '../config.js';
import type { AgentUseCases } from '../use-cases/index.js';

/** What the agent's routes are given (app.ts): they parse, call one use case, render. */
export interface RoutesContext {
  readonly config: AgentConfig;
  readonly version: string;
  /** The agent's readiness, which `/` and `/health` report. */
  readonly readiness: Readiness;
  readonly useCases: AgentUseCases;
}
