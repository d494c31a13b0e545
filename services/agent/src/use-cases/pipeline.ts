import type { Upload } from '../domain/subservices.js';
import type { Language } from '../domain/types.js';

/**
 * What every pipeline takes: a file (audio for `audio-*`, an image for `image-*`) and the language
 * spoken or written, which is also the answer's. Each step is timed in `steps` and observed in
 * `agent_pipeline_step_duration_seconds{pipeline,step}`; a step's failure fails the pipeline with
 * that step's error (the sub-service or LLM named); a recording with no speech or an image with no
 * text is 422 (nothing to work on). Clinical output carries `disclaimer`: an automated analysis,
 * not a diagnosis.
 */
export interface PipelineInput {
  readonly upload: Upload;
  readonly language: Language;
}
