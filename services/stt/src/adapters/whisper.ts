import { basename } from 'node:path';
import { ServiceUnavailableError } from '@clinicalsuite/kit';
import type { BackendStatus, Recognition } from '../domain/types.js';
import type { SttBackend } from './backend.js';

/**
 * The Whisper backend's place: a model was configured (STT_WHISPER_MODEL or MODEL_PATH), but this
 * version of the service has no Whisper runtime yet. It says so (state `failed`, with the reason),
 * so a `vi` request answers 503 naming the problem instead of pretending the model is not there
 * (or, worse, transcribing with an English engine).
 */
export class UnavailableWhisperBackend implements SttBackend {
  constructor(private readonly modelPath: string) {}

  status(): BackendStatus {
    return {
      id: 'whisper',
      state: 'failed',
      // What a multilingual Whisper model transcribes; routing sends these languages here and answers 503.
      languages: ['vi', 'en'],
      reason:
        `a Whisper model is configured (${this.modelPath}) but this version of the stt service has no Whisper ` +
        'runtime (whisper.cpp) built in yet; English is served by pocketsphinx, Vietnamese is unavailable',
      engine: 'whisper.cpp (not built in)',
      model: basename(this.modelPath),
    };
  }

  transcribe(): Promise<Recognition> {
    return Promise.reject(new ServiceUnavailableError(this.status().reason ?? 'Whisper is not available'));
  }

  start(): void {
    // Nothing to load.
  }

  settled(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
