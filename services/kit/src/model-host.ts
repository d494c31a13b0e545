import type { Logger } from './logger.js';
import { Resource } from './lifecycle/resource.js';
import { waitForModelFile } from './model-file.js';
import type { ReadinessSignal } from './readiness.js';

/**
 * The kit resource for a service's models (docs/architecture.md, "How a service is assembled"): waits for each file (not
 * ready, with a reason that names the path and the command that supplies it; picked up without a
 * restart when it appears), loads them, and frees them on close. A load failure keeps the service
 * not ready with the error as the reason.
 */

export type ModelState = 'waiting' | 'loading' | 'ready' | 'failed' | 'stopped';

export interface Disposable {
  dispose(): Promise<void>;
}

export interface ModelHostOptions<E extends Disposable> {
  /** The files the engine loads, all of which must be there. */
  readonly modelPaths: readonly string[];
  /** The condition it sets (`kit.model()` makes one). */
  readonly readiness: ReadinessSignal;
  readonly load: (paths: readonly string[]) => Promise<E>;
  readonly logger: Logger;
  readonly pollMs: number;
  /** What a user does about a missing file. */
  readonly hint: string;
  /** Extra fields for the "model loaded" log line, and warnings to log once loaded. */
  readonly describe?: (engine: E) => { fields?: Record<string, unknown>; warnings?: readonly string[] };
}

export class ModelHost<E extends Disposable> {
  private readonly resource: Resource<E>;

  constructor(options: ModelHostOptions<E>) {
    const { modelPaths } = options;
    this.resource = new Resource<E>(
      {
        name: 'the model',
        open: async ({ signal, readiness, logger, opening }) => {
          for (const path of modelPaths) {
            logger.info({ path }, 'waiting for the model file');
            await waitForModelFile(path, { readiness, hint: options.hint, pollMs: options.pollMs, signal });
          }
          opening(`loading model ${modelPaths.join(', ')}`);
          return options.load(modelPaths);
        },
        close: (engine) => engine.dispose(),
        failureReason: (error) => `model failed to load from ${modelPaths.join(', ')}: ${error.message}`,
        describe: (engine) => {
          const described = options.describe?.(engine) ?? {};
          return { ...described, fields: { paths: modelPaths, ...described.fields } };
        },
      },
      options.readiness,
      options.logger,
    );
  }

  /** Where the model is: `loading` once its files are all there. */
  get state(): ModelState {
    const state = this.resource.state;
    return state === 'opening' ? 'loading' : state;
  }

  /** The loaded engine, or `undefined`. */
  get engine(): E | undefined {
    return this.resource.value;
  }

  /** The engine, or 503 with the reason while there is none. */
  require(): E {
    return this.resource.require();
  }

  /** Resolves with the engine once loaded; rejects if loading fails or the host closes first. */
  opened(): Promise<E> {
    return this.resource.opened();
  }

  /** Starts waiting and loading in the background; resolves at once. */
  start(): void {
    this.resource.start();
  }

  /** Resolves when the model is loaded (or loading gave up). */
  settled(): Promise<void> {
    return this.resource.settled();
  }

  /** Stops waiting or loading and frees the model. */
  close(): Promise<void> {
    return this.resource.close();
  }
}
