import {
  DISCLAIMERS,
  codeSelectionMessages,
  codeSelectionSchema,
  parseCodeSelection,
} from '../domain/pipelines.js';
import type { UpstreamId } from '../domain/types.js';
import type { PipelineInput } from './pipeline.js';
import type { Call } from './ports.js';
import {
  DOCUMENT_CODE_TYPES,
  StepTimer,
  complete,
  documentBudget,
  documentCodes,
  finishTiming,
  ocrText,
  type StepDeps,
} from './steps.js';

/**
 * The `image-to-codes` pipeline: ocr → code_search (every line and clause of the text searched as
 * ICD-10/ICPC-2; the distinct codes found are the candidates) → code_selection (the LLM chooses
 * among the code search's candidates only: its JSON schema's enum is the candidate list, and the
 * answer is checked again; whatever else it names is `discarded`). No candidates: no LLM call.
 * Every code returned came from the code search.
 */

const PIPELINE = 'image-to-codes';

export function imageToCodesUseCase(deps: StepDeps) {
  return async (input: PipelineInput, call: Pick<Call, 'signal' | 'since'>) => {
    const { signal } = call;
    const { language } = input;
    const subs = deps.subservices;
    deps.metrics.intents.inc({ intent: 'search_code', source: 'fixed' });
    subs.ensureConfigured('codesearch');
    const timer = new StepTimer(deps, PIPELINE);
    const { text } = await ocrText(deps, timer, input.upload, signal);
    const found = await timer.run(
      'code_search',
      {
        subservice: 'codesearch',
        detail: (c) => `${c.queries.length} queries, ${c.candidates.length} candidate codes`,
      },
      () => documentCodes(subs, text, DOCUMENT_CODE_TYPES, signal),
    );
    let model: UpstreamId | null = null;
    let selection: ReturnType<typeof parseCodeSelection> = { selected: [], discarded: [], error: null };
    let truncated = false;
    if (found.candidates.length === 0) {
      timer.skip('code_selection', 'the code search proposed no codes for this text: nothing to choose from');
    } else {
      const prompt = codeSelectionMessages(text, found.candidates, language, documentBudget(deps));
      truncated = prompt.truncated;
      const result = await timer.run(
        'code_selection',
        { model: (r) => r.model, detail: () => `${found.candidates.length} candidates` },
        () =>
          complete(deps, prompt.messages, 'search_code', signal, {
            name: 'code_selection',
            schema: codeSelectionSchema(found.candidates),
          }),
      );
      model = result.model;
      selection = parseCodeSelection(result.text, found.candidates);
    }
    return {
      pipeline: PIPELINE,
      intent: 'search_code' as const,
      model,
      language,
      text,
      codes: selection.selected.map((s) => ({
        code: s.candidate.code,
        type: s.candidate.type,
        title: s.candidate.title,
        title_vi: s.candidate.title_vi,
        title_en: s.candidate.title_en,
        score: s.candidate.score,
        reason: s.reason,
      })),
      candidates: found.candidates.map(({ ref: _ref, ...c }) => c),
      discarded: [...selection.discarded],
      selection_error: selection.error,
      queries: found.queries.map((q) => q.query),
      code_types: found.code_types,
      missing_types: found.missing_types,
      warnings: found.warnings,
      disclaimer: DISCLAIMERS[language],
      truncated,
      steps: timer.steps,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
