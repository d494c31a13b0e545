import { BadGatewayError } from '@clinicalsuite/kit';
import { DISCLAIMERS, cutCodePoints } from '../domain/pipelines.js';
import type { PipelineInput } from './pipeline.js';
import type { Call } from './ports.js';
import { StepTimer, analyseDocument, finishTiming, transcript, type StepDeps } from './steps.js';

/**
 * The `audio-full-consult` pipeline: transcribe (stt) → consultation (the LLM's reply to the
 * patient) → tts (the reply spoken, as WAV in `audio_base64`; a reply over 5000 characters is
 * spoken up to there, which the tts step says).
 */

const PIPELINE = 'audio-full-consult';
/** Longest reply the consultation speaks (the tts service's default TTS_MAX_CHARS). */
const MAX_SPOKEN_CHARS = 5000;
const SPEAKABLE = /[\p{L}\p{N}]/u;

export function audioFullConsultUseCase(deps: StepDeps) {
  return async (input: PipelineInput, call: Pick<Call, 'signal' | 'since'>) => {
    const { signal } = call;
    const { language } = input;
    deps.metrics.intents.inc({ intent: 'chat', source: 'fixed' });
    // Fail before any work when the reply could not be spoken.
    deps.subservices.ensureConfigured('tts');
    const timer = new StepTimer(deps, PIPELINE);
    const text = await transcript(deps, timer, input.upload, language, signal);
    const reply = await analyseDocument(
      deps,
      timer,
      'consultation',
      'consultation',
      text,
      language,
      'chat',
      signal,
    );
    if (!SPEAKABLE.test(reply.text)) {
      throw new BadGatewayError(
        `The consultation reply from ${reply.model} has nothing to speak (no letter or digit)`,
      );
    }
    const spoken = cutCodePoints(reply.text, MAX_SPOKEN_CHARS);
    const cut = spoken.length < reply.text.length;
    const audio = await timer.run(
      'tts',
      {
        subservice: 'tts',
        detail: () => (cut ? `the reply was spoken up to ${MAX_SPOKEN_CHARS} characters` : null),
      },
      () => deps.subservices.speak({ text: spoken, language, speed: 1, format: 'wav' }, signal),
    );
    return {
      pipeline: PIPELINE,
      intent: 'chat' as const,
      model: reply.model,
      language,
      transcript: text,
      text: reply.text,
      audio_base64: audio.audio_base64,
      audio: {
        format: audio.format,
        mime_type: audio.mime_type,
        sample_rate: audio.sample_rate,
        duration_seconds: audio.duration_seconds,
        engine: audio.engine,
        voice: audio.voice,
      },
      disclaimer: DISCLAIMERS[language],
      truncated: reply.truncated,
      steps: timer.steps,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
