import { DISCLAIMERS } from '../domain/pipelines.js';
import type { PipelineInput } from './pipeline.js';
import type { Call } from './ports.js';
import { StepTimer, analyseDocument, finishTiming, ocrText, type StepDeps } from './steps.js';

/**
 * The `image-full-analysis` pipeline: ocr → analysis (LLM: document type, patient details as
 * written, history, findings and results against written reference ranges, diagnoses and
 * treatments written, inconsistencies, follow-up). Not a diagnosis: `disclaimer`.
 */

const PIPELINE = 'image-full-analysis';

export function imageFullAnalysisUseCase(deps: StepDeps) {
  return async (input: PipelineInput, call: Pick<Call, 'signal' | 'since'>) => {
    const { signal } = call;
    deps.metrics.intents.inc({ intent: 'analyze', source: 'fixed' });
    const timer = new StepTimer(deps, PIPELINE);
    const { text, meanConfidence } = await ocrText(deps, timer, input.upload, signal);
    const analysis = await analyseDocument(
      deps,
      timer,
      'analysis',
      'detailed_analysis',
      text,
      input.language,
      'analyze',
      signal,
    );
    return {
      pipeline: PIPELINE,
      intent: 'analyze' as const,
      model: analysis.model,
      language: input.language,
      text,
      mean_confidence: meanConfidence,
      analysis: analysis.text,
      disclaimer: DISCLAIMERS[input.language],
      truncated: analysis.truncated,
      steps: timer.steps,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
