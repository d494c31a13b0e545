import type { SearchRequest } from '../domain/subservices.js';
import type { Call } from './ports.js';
import { StepTimer, finishTiming, type StepDeps } from './steps.js';

/**
 * `/search`: medical codes (the codesearch sub-service). A requested type the code search has no
 * codes for is listed in `missing_types`, not an error.
 */

export function codeSearchUseCase(deps: Pick<StepDeps, 'metrics' | 'subservices'>) {
  return async (input: SearchRequest, call: Pick<Call, 'signal' | 'since'>) => {
    deps.metrics.intents.inc({ intent: 'search_code', source: 'fixed' });
    const timer = new StepTimer(deps, null);
    const found = await timer.run('code_search', { subservice: 'codesearch' }, () =>
      deps.subservices.search(input, call.signal),
    );
    return {
      intent: 'search_code' as const,
      model: null,
      query: found.query,
      mode: found.mode,
      mode_reason: found.mode_reason ?? null,
      code_types: found.code_types,
      missing_types: found.missing_types,
      warnings: found.warnings,
      expansions: found.expansions ?? [],
      results: found.results,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
