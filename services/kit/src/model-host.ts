import { ServiceUnavailableError } from './errors.js';
import type { Logger } from './logger.js';
import { waitForModelFile } from './model-file.js';
import type { Readiness } from './readiness.js';

/**
 * Owns a service's models after the server listens: waits for each file (not ready, with a reason
 * that names the path and the command that supplies it; picked up without a restart when it
 * appears), loads them, and sets readiness. A load failure keeps the service not ready with the
 * error as the reason.
 */

export type ModelState = 'waiting' | 'loading' | 'ready' | 'failed' | 'stopped';

export interface Disposable {
  dispose(): Promise<void>;
}

export interface ModelHostOptions<E extends Disposable> {
  /** The files the engine loads, all of which must be there. */
  readonly modelPaths: readonly string[];
  readonly readiness: Readiness;
  readonly load: (paths: readonly string[]) => Promise<E>;
  readonly logger: Logger;
  readonly pollMs: number;
  /** What a user does about a missing file. */
  readonly hint: string;
  /** Extra fields for the "model loaded" log line, and warnings to log once loaded. */
  readonly describe?: (engine: E) => { fields?: Record<string, unknown>; warnings?: readonly string[] };
}

export class ModelHost<E extends Disposable> {
  private current: E | undefined;
  private stateValue: ModelState = 'waiting';
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;

  constructor(private readonly options: ModelHostOptions<E>) {}

  get state(): ModelState {
    return this.stateValue;
  }

  get engine(): E | undefined {
    return this.current;
  }

  /** The engine, or 503 while there is none (routes that pass the readiness check have one). */
  require(): E {
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
      const paths = this.options.modelPaths.join(', ');
      this.options.readiness.setNotReady(`model failed to load from ${paths}: ${message}`);
      this.options.logger.error({ err: error, paths: this.options.modelPaths }, 'model failed to load');
    });
  }

  /** Resolves when the model is loaded (or loading gave up). */
  async settled(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    const { modelPaths, readiness, logger } = this.options;
    for (const path of modelPaths) {
      logger.info({ path }, 'waiting for the model file');
      await waitForModelFile(path, {
        readiness,
        hint: this.options.hint,
        pollMs: this.options.pollMs,
        signal: this.stop.signal,
      });
    }
    this.stateValue = 'loading';
    readiness.setNotReady(`loading model ${modelPaths.join(', ')}`);
    const started = performance.now();
    const engine = await this.options.load(modelPaths);
    if (this.stop.signal.aborted) {
      await engine.dispose();
      return;
    }
    this.current = engine;
    this.stateValue = 'ready';
    readiness.setReady();
    const described = this.options.describe?.(engine) ?? {};
    logger.info(
      {
        paths: modelPaths,
        seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
        ...described.fields,
      },
      'model loaded',
    );
    for (const warning of described.warnings ?? []) logger.warn(warning);
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
