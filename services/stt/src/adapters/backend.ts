import type { BackendStatus, Language, Recognition } from '../domain/types.js';

/** One speech recognition engine behind the service: pocketsphinx, a Whisper model. */
export interface SttBackend {
  status(): BackendStatus;
  /** 16 kHz mono s16le PCM in; stops (and rejects) when `signal` aborts. */
  transcribe(pcm: Buffer, options: { language: Language; signal: AbortSignal }): Promise<Recognition>;
  /** Starts loading (returns at once); `ready()` resolves when it settled. */
  start(): void;
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** Raised by a backend when its engine fails on a request (rendered as 500 without the detail). */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly detail: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}
