import { DISCLAIMERS } from '../domain/pipelines.js';
import type { Upload } from '../domain/subservices.js';
import type { Language } from '../domain/types.js';
import type { Call } from './ports.js';
import { StepTimer, analyseDocument, finishTiming, type DocumentAnalysis, type StepDeps } from './steps.js';

/**
 * `/transcribe`: speech to text (the stt sub-service) and, when asked, the LLM's analysis of the
 * transcript in `language`. Silence gives an empty text and no analysis.
 */

export interface TranscriptionInput {
  readonly upload: Upload;
  readonly language: Language;
  readonly analyze: boolean;
}

export function transcriptionUseCase(deps: StepDeps) {
  return async (input: TranscriptionInput, call: Pick<Call, 'signal' | 'since'>) => {
    const { signal } = call;
    deps.metrics.intents.inc({ intent: 'transcribe', source: 'fixed' });
    const timer = new StepTimer(deps, null);
    const stt = await timer.run('transcribe', { subservice: 'stt' }, () =>
      deps.subservices.transcribe(input.upload, input.language, signal),
    );
    let analysis: DocumentAnalysis | null = null;
    if (input.analyze) {
      if (stt.text.trim() === '') timer.skip('analysis', 'no speech was recognised: nothing to analyse');
      else
        analysis = await analyseDocument(
          deps,
          timer,
          'analysis',
          'transcript_analysis',
          stt.text,
          input.language,
          'analyze',
          signal,
        );
    }
    return {
      intent: 'transcribe' as const,
      model: analysis?.model ?? null,
      text: stt.text,
      language: stt.language,
      transcription: stt.raw,
      analysis: analysis?.text ?? null,
      disclaimer: analysis === null ? null : DISCLAIMERS[input.language],
      steps: timer.steps,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
