import type { Logger } from '@clinicalsuite/kit';
import type { ShellRequest, ShellResponse } from '../schemas/shell.js';
import type { Call, UseCaseDeps } from './ports.js';

/**
 * `/shell`: one allowlisted command, or a request in words the LLM turns into one, checked by the
 * policy and run without a shell (docs/shell.md); off unless SHELL_EXEC_ENABLED.
 */
export function shellCommandUseCase(deps: Pick<UseCaseDeps, 'shell'>) {
  const { shell } = deps;
  return {
    /** SHELL_EXEC_ENABLED. */
    get enabled(): boolean {
      return shell.enabled;
    },
    /** A request refused while disabled, counted and logged: the error to answer with (403). */
    refuseDisabled: (log: Logger): Error => shell.refuseDisabled(log),
    run: (request: ShellRequest, call: Pick<Call, 'signal' | 'log'>): Promise<ShellResponse> =>
      shell.run(request, call.signal, call.log),
  };
}
