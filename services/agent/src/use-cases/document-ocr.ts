import { DISCLAIMERS } from '../domain/pipelines.js';
import type { Upload } from '../domain/subservices.js';
import type { Language } from '../domain/types.js';
import type { Call } from './ports.js';
import {
  DOCUMENT_CODE_TYPES,
  StepTimer,
  analyseDocument,
  documentCodes,
  finishTiming,
  type DocumentAnalysis,
  type DocumentCodes,
  type StepDeps,
} from './steps.js';

/**
 * `/ocr`: the text of an image or PDF (the ocr sub-service); when asked, each line and clause of
 * it searched as ICD-10 and ICPC-2 codes, and the LLM's analysis of it in `language`.
 */

export interface DocumentOcrInput {
  readonly upload: Upload;
  readonly language: Language;
  readonly analyze: boolean;
  readonly search: boolean;
}

export function documentOcrUseCase(deps: StepDeps) {
  return async (input: DocumentOcrInput, call: Pick<Call, 'signal' | 'since'>) => {
    const { signal } = call;
    const subs = deps.subservices;
    deps.metrics.intents.inc({ intent: 'ocr', source: 'fixed' });
    // Asked for codes without a code search: the 503 before any work.
    if (input.search) subs.ensureConfigured('codesearch');
    const timer = new StepTimer(deps, null);
    const ocr = await timer.run('ocr', { subservice: 'ocr' }, () => subs.ocr(input.upload, signal));
    const empty = ocr.text.trim() === '';
    let codes: DocumentCodes | null = null;
    if (input.search) {
      codes = await timer.run(
        'code_search',
        {
          subservice: 'codesearch',
          detail: (c) => `${c.queries.length} queries, ${c.candidates.length} codes`,
        },
        () => documentCodes(subs, ocr.text, DOCUMENT_CODE_TYPES, signal),
      );
    }
    let analysis: DocumentAnalysis | null = null;
    if (input.analyze) {
      if (empty) timer.skip('analysis', 'no text was found in the image: nothing to analyse');
      else
        analysis = await analyseDocument(
          deps,
          timer,
          'analysis',
          'ocr_analysis',
          ocr.text,
          input.language,
          'analyze',
          signal,
        );
    }
    return {
      intent: 'ocr' as const,
      model: analysis?.model ?? null,
      text: ocr.text,
      ocr: ocr.raw,
      analysis: analysis?.text ?? null,
      disclaimer: analysis === null ? null : DISCLAIMERS[input.language],
      codes,
      steps: timer.steps,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
