import { performance } from 'node:perf_hooks';
import type { EngineResult, Finding } from '../domain/types.js';
import { EngineUnavailableError } from './errors.js';
import { encodeFindings, type Evidence } from './evidence.js';
import type { CompiledModel } from './model.js';
import { GRAPH_INPUTS, GRAPH_OUTPUTS } from './onnx-graph.js';
import { importOrt, message, openSession, type Ort, type Session } from './onnx-session.js';
import { ReferenceEngine } from './reference.js';
import { buildResult, type Engine, type EngineInfo, type EngineStats, type ResultOptions } from './result.js';

/**
 * The adapter: the compiled model's ONNX graph (onnx-graph.ts) in onnxruntime-node, with
 * micro-batching. Concurrent `score()` calls are queued; the queue is run as one batch
 * (one `session.run`) when the batching window after the first queued call has passed, when it
 * reaches `maxBatch`, or — for calls that arrived while a run was in flight — as soon as that run
 * ends. One run at a time.
 *
 * Devices as in the face service: `cpu`; `cuda` (the CUDA execution provider, or an error saying
 * why not); `auto` (CUDA where a GPU is visible and the provider loads, else CPU, with the reason
 * reported in `info.fallbackReason`). `loadEngine` adds the last resort: the reference engine when
 * onnxruntime itself cannot load.
 *
 * Deterministic: the same findings give the same bits, alone or batched with others (each row of
 * the graph's products is computed on its own; the batching test checks it).
 */

export type ExecutionDevice = 'auto' | 'cpu' | 'cuda';

export interface OnnxEngineOptions extends ResultOptions {
  /** Default `cpu`. */
  readonly device?: ExecutionDevice;
  readonly cudaDeviceId?: number;
  /**
   * For `auto`: whether a GPU is visible (the kit's GPU reader's `available`). CUDA is tried only
   * when true: onnxruntime logs errors when it tries a provider it cannot load.
   */
  readonly gpuAvailable?: boolean;
  /** Intra-op threads (default 1). */
  readonly threads?: number;
  /** How long the first queued request waits for company, ms (default 1; 0: the next turn of the event loop). */
  readonly batchWindowMs?: number;
  /** Most requests in one run (default 64). */
  readonly maxBatch?: number;
  /** Called after every run (metrics). */
  readonly onRun?: (run: { readonly batchSize: number; readonly seconds: number }) => void;
  /**
   * Above this many bytes of float32 tables (four [F, H] tables), the graph is written to a
   * temporary directory with its tables as ONNX external data and loaded from there (a protobuf
   * message cannot exceed 2 GiB). Default `EXTERNAL_TABLES_ABOVE_BYTES` (onnx-session.ts).
   */
  readonly externalTablesAboveBytes?: number;
  /** Where that temporary directory is made (default the OS's temporary directory). */
  readonly tempDir?: string;
}

/** One run's raw outputs, row-major: llr and posterior [batch, H], gain [batch, F]. */
export interface RawScores {
  readonly batch: number;
  readonly llr: Float32Array;
  readonly posterior: Float32Array;
  readonly gain: Float32Array;
}

interface Pending {
  readonly evidence: Evidence;
  readonly options: ResultOptions | undefined;
  readonly resolve: (result: EngineResult) => void;
  readonly reject: (error: Error) => void;
}

export class OnnxEngine implements Engine {
  readonly info: EngineInfo;
  #queue: Pending[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** The queued batch being run, if any. */
  #running: Promise<void> | undefined;
  #disposed = false;
  #runs = 0;
  #requests = 0;
  #largest = 0;

  private constructor(
    readonly model: CompiledModel,
    private readonly ort: Ort,
    private readonly session: Session,
    info: EngineInfo,
    private readonly options: OnnxEngineOptions,
  ) {
    this.info = info;
  }

  /** Builds the graph and opens a session; throws `EngineUnavailableError` when it cannot. */
  static async create(model: CompiledModel, options: OnnxEngineOptions = {}): Promise<OnnxEngine> {
    checkOptions(options);
    const ort = await importOrt();
    const { session, device, fallbackReason } = await openSession(ort, model, options);
    const info: EngineInfo = {
      kind: 'onnxruntime',
      device,
      requestedDevice: options.device ?? 'cpu',
      ...(fallbackReason === undefined ? {} : { fallbackReason }),
      modelVersion: model.version,
      fingerprint: model.fingerprint,
    };
    return new OnnxEngine(model, ort, session, info, options);
  }

  score(findings: readonly Finding[], options?: ResultOptions): Promise<EngineResult> {
    let evidence: Evidence;
    try {
      evidence = encodeFindings(this.model, findings);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return this.#enqueue([evidence], options).then((r) => r[0] as EngineResult);
  }

  /** Several finding lists at once (queued together: one run up to `maxBatch`). */
  scoreBatch(batch: readonly (readonly Finding[])[], options?: ResultOptions): Promise<EngineResult[]> {
    let evidence: Evidence[];
    try {
      evidence = batch.map((findings) => encodeFindings(this.model, findings));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return this.#enqueue(evidence, options);
  }

  /** One run on encoded evidence, outside the queue (tests compare it with the reference; the bench). */
  async runEvidence(batch: readonly Evidence[]): Promise<RawScores> {
    if (this.#disposed) throw new EngineUnavailableError('the engine has been disposed');
    const F = this.model.features.length;
    const B = batch.length;
    const present = new Float32Array(B * F);
    const absent = new Float32Array(B * F);
    batch.forEach((e, row) => {
      for (const f of e.weighted) {
        present[row * F + f] = e.present[f] ?? 0;
        absent[row * F + f] = e.absent[f] ?? 0;
      }
    });
    const started = performance.now();
    const out = await this.session.run({
      [GRAPH_INPUTS.present]: new this.ort.Tensor('float32', present, [B, F]),
      [GRAPH_INPUTS.absent]: new this.ort.Tensor('float32', absent, [B, F]),
    });
    this.#runs += 1;
    this.#requests += B;
    this.#largest = Math.max(this.#largest, B);
    this.options.onRun?.({ batchSize: B, seconds: (performance.now() - started) / 1000 });
    return {
      batch: B,
      llr: floatOutput(out, GRAPH_OUTPUTS.llr),
      posterior: floatOutput(out, GRAPH_OUTPUTS.posterior),
      gain: floatOutput(out, GRAPH_OUTPUTS.gain),
    };
  }

  stats(): EngineStats {
    return { runs: this.#runs, requestsScored: this.#requests, largestBatch: this.#largest };
  }

  /** Rejects what is queued, lets the run in flight finish (its callers get their answers), releases the session. */
  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const queued = this.#queue.splice(0);
    for (const p of queued) p.reject(new EngineUnavailableError('the engine has been disposed'));
    await this.#running;
    await this.session.release();
  }

  #enqueue(evidence: readonly Evidence[], options: ResultOptions | undefined): Promise<EngineResult[]> {
    if (this.#disposed) return Promise.reject(new EngineUnavailableError('the engine has been disposed'));
    const promises = evidence.map(
      (e) =>
        new Promise<EngineResult>((resolve, reject) => {
          this.#queue.push({ evidence: e, options, resolve, reject });
        }),
    );
    this.#schedule();
    return Promise.all(promises);
  }

  #schedule(): void {
    if (this.#running !== undefined) return; // drained when the run ends
    if (this.#queue.length >= (this.options.maxBatch ?? 64)) {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#flush();
      return;
    }
    if (this.#timer !== undefined) return;
    const windowMs = this.options.batchWindowMs ?? 1;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flush();
    }, windowMs);
  }

  #flush(): void {
    const batch = this.#queue.splice(0, this.options.maxBatch ?? 64);
    if (batch.length === 0) return;
    this.#running = this.#run(batch).finally(() => {
      this.#running = undefined;
      // Requests that arrived during the run have waited long enough: run them now. (A queue
      // holding anything means the engine is not disposed: dispose empties it, score refuses.)
      if (this.#queue.length > 0) {
        if (this.#timer !== undefined) clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#flush();
      }
    });
  }

  /** One queued batch: every caller gets its result or the run's error; never rejects. */
  async #run(batch: readonly Pending[]): Promise<void> {
    let raw: RawScores;
    try {
      raw = await this.runEvidence(batch.map((p) => p.evidence));
    } catch (error) {
      const failure =
        error instanceof EngineUnavailableError
          ? error
          : new EngineUnavailableError(`the scoring run failed: ${message(error)}`, { cause: error });
      for (const p of batch) p.reject(failure);
      return;
    }
    const F = this.model.features.length;
    const H = this.model.hypotheses;
    batch.forEach((p, row) => {
      try {
        p.resolve(
          buildResult(
            this.model,
            p.evidence,
            raw.posterior.subarray(row * H, (row + 1) * H),
            raw.gain.subarray(row * F, (row + 1) * F),
            { ...this.options, ...p.options },
          ),
        );
      } catch (error) {
        p.reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }
}

function checkOptions(options: OnnxEngineOptions): void {
  const positiveInteger = (name: string, value: number | undefined): void => {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
      throw new RangeError(`${name} must be a positive integer, not ${value}`);
    }
  };
  positiveInteger('maxBatch', options.maxBatch);
  positiveInteger('threads', options.threads);
  const window = options.batchWindowMs;
  if (window !== undefined && !(Number.isFinite(window) && window >= 0)) {
    throw new RangeError(`batchWindowMs must be a number >= 0, not ${window}`);
  }
  const external = options.externalTablesAboveBytes;
  if (external !== undefined && !(Number.isFinite(external) && external >= 0)) {
    throw new RangeError(`externalTablesAboveBytes must be a number >= 0, not ${external}`);
  }
}

function floatOutput(outputs: Record<string, { type: string; data: unknown }>, name: string): Float32Array {
  const t = outputs[name];
  if (t === undefined) throw new Error(`the scoring graph has no output ${name}`);
  // By type, not instanceof: the native addon's typed arrays may come from another realm.
  if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, float32 expected`);
  return t.data as Float32Array;
}

export interface LoadEngineOptions extends OnnxEngineOptions {
  /**
   * When onnxruntime itself cannot load (no native binding for the platform), score with the
   * reference engine and say so in `info` (default true). Never under `device: 'cuda'`: a
   * configuration that requires the GPU fails rather than run in JavaScript.
   */
  readonly fallbackToReference?: boolean;
}

/** The ONNX engine, or the reference engine (reported as such) where onnxruntime cannot load. */
export async function loadEngine(model: CompiledModel, options: LoadEngineOptions = {}): Promise<Engine> {
  try {
    await importOrt();
  } catch (error) {
    if (options.fallbackToReference === false || options.device === 'cuda') throw error;
    return new ReferenceEngine(model, {
      ...options,
      requestedDevice: options.device ?? 'cpu',
      fallbackReason: `${message(error)}; scoring with the reference engine (JavaScript, CPU)`,
    });
  }
  return OnnxEngine.create(model, options);
}
