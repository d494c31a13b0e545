import { ServiceUnavailableError, waitForModelFile, type Logger, type Readiness } from '@clinicalsuite/kit';
import type { LlmEngine } from './engine.js';

/**
 * Owns the model's lifecycle after the server listens: waits for the file (not ready, with a
 * reason that names the path and the command that supplies it; picked up without a restart when it
 * appears), loads it, and sets readiness. A load failure keeps the service not ready with the
 * error as the reason.
 */

export type ModelState = 'waiting' | 'loading' | 'ready' | 'failed' | 'stopped';

export interface ModelHostOptions {
  readonly modelPath: string;
  readonly readiness: Readiness;
  readonly load: (path: string) => Promise<LlmEngine>;
  readonly logger: Logger;
  readonly pollMs: number;
  /** What a user does about a missing file. */
  readonly hint?: string;
}

export const MODEL_HINT = 'run `npm run models -- fetch llm` or mount the GGUF there';

export class ModelHost {
  private current: LlmEngine | undefined;
  private stateValue: ModelState = 'waiting';
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;

  constructor(private readonly options: ModelHostOptions) {}

  get state(): ModelState {
    return this.stateValue;
  }

  get engine(): LlmEngine | undefined {
    return this.current;
  }

  /** The engine, or 503 while there is none (routes that pass the readiness check have one). */
  require(): LlmEngine {
    if (this.current === undefined) {
      throw new ServiceUnavailableError(
        `Model not loaded: ${this.options.readiness.reason ?? this.stateValue}`,
      );
    }
    return this.current;
  }

  /** Starts waiting and loading in the background; resolves at once. */
  start(): void {
    this.running ??= this.run().catch((error: unknown) => {
      if (this.stop.signal.aborted) return;
      this.stateValue = 'failed';
      const message = error instanceof Error ? error.message : String(error);
      this.options.readiness.setNotReady(`model failed to load from ${this.options.modelPath}: ${message}`);
      this.options.logger.error({ err: error, path: this.options.modelPath }, 'model failed to load');
    });
  }

  /** Resolves when the model is loaded (or loading gave up). */
  async settled(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    const { modelPath, readiness, logger } = this.options;
    logger.info({ path: modelPath }, 'waiting for the model file');
    await waitForModelFile(modelPath, {
      readiness,
      hint: this.options.hint ?? MODEL_HINT,
      pollMs: this.options.pollMs,
      signal: this.stop.signal,
    });
    this.stateValue = 'loading';
    readiness.setNotReady(`loading model ${modelPath}`);
    const started = performance.now();
    const engine = await this.options.load(modelPath);
    if (this.stop.signal.aborted) {
      await engine.dispose();
      return;
    }
    this.current = engine;
    this.stateValue = 'ready';
    readiness.setReady();
    logger.info(
      {
        path: modelPath,
        seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
        contextSize: engine.contextSize,
        chatTemplate: engine.description.chatTemplate.wrapper,
        gpu: engine.description.gpu,
      },
      'model loaded',
    );
    if (engine.description.chatTemplate.note !== null) logger.warn(engine.description.chatTemplate.note);
  }

  /** Stops waiting or loading and frees the model. */
  async close(): Promise<void> {
    this.stop.abort();
    this.stateValue = 'stopped';
    await this.running;
    const engine = this.current;
    this.current = undefined;
    await engine?.dispose();
  }
}
