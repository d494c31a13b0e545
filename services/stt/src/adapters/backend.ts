import type { OpenContext, ReadinessSignal } from '@clinicalsuite/kit';
import { notServingReason } from '../domain/routing.js';
import type { BackendId, BackendStatus, Language, Recognition } from '../domain/types.js';

/** One speech recognition engine behind the service: pocketsphinx, a Whisper model. */
export interface SttBackend {
  readonly id: BackendId;
  /** Processes started ahead, model loaded (or loading), waiting for audio; where it keeps any. */
  readonly warmProcesses?: number;
  status(): BackendStatus;
  /** 16 kHz mono s16le PCM in; stops (and rejects) when `signal` aborts. */
  transcribe(pcm: Buffer, options: { language: Language; signal: AbortSignal }): Promise<Recognition>;
  /** Loads it (a kit resource, opened after the server listens); throws with the reason it cannot. */
  open(ctx: OpenContext): Promise<SttBackend>;
  /** Stops its processes and frees the model. */
  close(): Promise<void>;
}

/**
 * The backends configured, and the service's readiness with them: ready when one of them is (each
 * backend's own resource is optional), else not ready naming why each is not.
 */
export class SttBackends {
  private readonly byId = new Map<BackendId, SttBackend>();

  constructor(private readonly serving: ReadinessSignal) {}

  get map(): ReadonlyMap<BackendId, SttBackend> {
    return this.byId;
  }

  add(backend: SttBackend): void {
    this.byId.set(backend.id, backend);
    this.refresh();
  }

  statuses(): BackendStatus[] {
    return [...this.byId.values()].map((b) => b.status());
  }

  /** Called when a backend becomes ready or fails. */
  refresh(): void {
    const reason = notServingReason(this.statuses());
    if (reason === undefined) this.serving.setReady();
    else this.serving.setNotReady(reason);
  }
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
