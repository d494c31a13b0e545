import type { Upload } from '../domain/subservices.js';
import type { Call } from './ports.js';
import { StepTimer, finishTiming, type StepDeps } from './steps.js';

/** `/face`: every face in an image, matched against the face service's registered persons. */

export interface FaceRecognitionInput {
  readonly upload: Upload;
  /** Minimum confidence to call a face recognized; default: the face service's. */
  readonly confidenceThreshold?: number | undefined;
}

export function faceRecognitionUseCase(deps: Pick<StepDeps, 'metrics' | 'subservices'>) {
  return async (input: FaceRecognitionInput, call: Pick<Call, 'signal' | 'since'>) => {
    deps.metrics.intents.inc({ intent: 'face_recognize', source: 'fixed' });
    const timer = new StepTimer(deps, null);
    const face = await timer.run('recognize', { subservice: 'face' }, () =>
      deps.subservices.recognizeFaces(
        input.upload,
        { confidenceThreshold: input.confidenceThreshold },
        call.signal,
      ),
    );
    return {
      intent: 'face_recognize' as const,
      model: null,
      message: face.message,
      faces_detected: face.data.faces_detected,
      faces: face.data.faces,
      recognition: face.data,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
