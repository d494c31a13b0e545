import type { SpeakRequest } from '../domain/subservices.js';
import type { Call } from './ports.js';
import { StepTimer, finishTiming, type StepDeps } from './steps.js';

/** `/tts`: a text spoken (the tts sub-service), the audio in base64 with its format, rate and duration. */

export function speechUseCase(deps: Pick<StepDeps, 'metrics' | 'subservices'>) {
  return async (input: SpeakRequest, call: Pick<Call, 'signal' | 'since'>) => {
    deps.metrics.intents.inc({ intent: 'tts', source: 'fixed' });
    const timer = new StepTimer(deps, null);
    const audio = await timer.run('tts', { subservice: 'tts' }, () =>
      deps.subservices.speak(input, call.signal),
    );
    return {
      intent: 'tts' as const,
      model: null,
      audio_base64: audio.audio_base64,
      format: audio.format,
      mime_type: audio.mime_type,
      sample_rate: audio.sample_rate,
      duration_seconds: audio.duration_seconds,
      size_bytes: audio.size_bytes,
      engine: audio.engine,
      voice: audio.voice,
      language: audio.language,
      speed: audio.speed,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
