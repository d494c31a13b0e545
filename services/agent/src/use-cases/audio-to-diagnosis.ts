import { DISCLAIMERS } from '../domain/pipelines.js';
import type { PipelineInput } from './pipeline.js';
import type { Call } from './ports.js';
import { StepTimer, analyseDocument, finishTiming, transcript, type StepDeps } from './steps.js';

/**
 * The `audio-to-diagnosis` pipeline: transcribe (stt) → analysis (LLM: each symptom, warning signs,
 * conditions worth considering with the reason, questions to ask). Not a diagnosis: `disclaimer`.
 */

const PIPELINE = 'audio-to-diagnosis';

export function audioToDiagnosisUseCase(deps: StepDeps) {
  return async (input: PipelineInput, call: Pick<Call, 'signal' | 'since'>) => {
    const { signal } = call;
    deps.metrics.intents.inc({ intent: 'analyze', source: 'fixed' });
    const timer = new StepTimer(deps, PIPELINE);
    const text = await transcript(deps, timer, input.upload, input.language, signal);
    const analysis = await analyseDocument(
      deps,
      timer,
      'analysis',
      'symptom_analysis',
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
      transcript: text,
      analysis: analysis.text,
      disclaimer: DISCLAIMERS[input.language],
      truncated: analysis.truncated,
      steps: timer.steps,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
