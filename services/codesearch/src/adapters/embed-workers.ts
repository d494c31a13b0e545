import { Worker } from 'node:worker_threads';
import type { FromWorker, ToWorker, WorkerData } from './embed-worker.js';
import type { EmbedKind, EncoderSpec } from './sentence-encoder.js';

/**
 * Embeds many texts (the code titles) on worker threads, one single-threaded onnxruntime session
 * each, so the event loop stays free for requests while they run. The threads live for one call:
 * started when there is something to embed, ended (after the batch in hand) when it is done,
 * failed or aborted.
 */

export interface EmbedManyOptions {
  /** Worker threads (each one session with one intra-op thread). */
  readonly workers: number;
  /** Texts per batch, taken in order of length so a batch wastes little on padding. */
  readonly batchSize: number;
  /** Stops handing out batches; the call then resolves null once the threads have ended. */
  readonly signal: AbortSignal;
  /** Texts embedded so far, after each batch. */
  readonly onProgress?: (done: number) => void;
  /** Node options for the threads (default: the process's own). */
  readonly execArgv?: readonly string[];
}

/** `texts.length` rows of `dim` floats, in the order of `texts`; null when aborted. */
export async function embedMany(
  spec: EncoderSpec,
  texts: readonly string[],
  kind: EmbedKind,
  dim: number,
  options: EmbedManyOptions,
): Promise<Float32Array | null> {
  const out = new Float32Array(texts.length * dim);
  const order = texts.map((_, i) => i).sort((a, b) => (texts[a]?.length ?? 0) - (texts[b]?.length ?? 0));
  const batches: number[][] = [];
  for (let i = 0; i < order.length; i += options.batchSize)
    batches.push(order.slice(i, i + options.batchSize));
  const threads = Array.from(
    { length: Math.min(Math.max(1, options.workers), batches.length) },
    () => new EmbedWorker(spec, options.execArgv),
  );
  let next = 0;
  let done = 0;
  let failed = false;
  const lane = async (worker: EmbedWorker): Promise<void> => {
    await worker.ready;
    for (;;) {
      if (options.signal.aborted || failed) return;
      const rows = batches[next++];
      if (rows === undefined) return;
      const got = await worker.embed(
        rows.map((r) => texts[r] ?? ''),
        kind,
      );
      if (got.dim !== dim) throw new Error(`the model gave ${got.dim}-d vectors, ${dim}-d expected`);
      rows.forEach((r, j) => out.set(got.vectors.subarray(j * dim, (j + 1) * dim), r * dim));
      done += rows.length;
      options.onProgress?.(done);
    }
  };
  const results = await Promise.allSettled(
    threads.map((t) =>
      lane(t).catch((err: unknown) => {
        failed = true;
        throw err;
      }),
    ),
  );
  await Promise.all(threads.map((t) => t.close()));
  for (const r of results) if (r.status === 'rejected') throw r.reason;
  return options.signal.aborted ? null : out;
}

const WORKER_URL = new URL('./embed-worker.js', import.meta.url);
/**
 * The threads' niceness: while they embed, the event loop's thread still gets a core the moment
 * a request arrives (the README's Vectors paragraph has the measurements).
 */
const WORKER_NICE = 10;

/** One worker thread, one batch at a time. */
class EmbedWorker {
  readonly ready: Promise<void>;
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  private pending:
    { resolve: (v: { vectors: Float32Array; dim: number }) => void; reject: (e: Error) => void } | undefined;
  private failure: Error | undefined;
  private closing = false;

  constructor(spec: EncoderSpec, execArgv: readonly string[] | undefined) {
    this.worker = new Worker(WORKER_URL, {
      workerData: { ...spec, threads: 1, nice: WORKER_NICE } satisfies WorkerData,
      ...(execArgv === undefined ? {} : { execArgv: [...execArgv] }),
    });
    let setReady!: () => void;
    let failReady!: (e: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      setReady = resolve;
      failReady = reject;
    });
    // Awaited through lane(); a start that fails also rejects embed().
    this.ready.catch(() => undefined);
    const fail = (err: Error): void => {
      this.failure ??= err;
      failReady(err);
      this.pending?.reject(err);
      this.pending = undefined;
    };
    this.worker.on('message', (message: FromWorker) => {
      if (message.kind === 'ready') setReady();
      else if (message.kind === 'error') fail(new Error(message.message));
      else {
        this.pending?.resolve({ vectors: message.vectors, dim: message.dim });
        this.pending = undefined;
      }
    });
    this.worker.on('error', fail);
    this.exited = new Promise((resolve) => {
      this.worker.on('exit', (code) => {
        if (!this.closing || code !== 0) fail(new Error(`the embedding worker thread exited (code ${code})`));
        resolve();
      });
    });
  }

  embed(texts: readonly string[], as: EmbedKind): Promise<{ vectors: Float32Array; dim: number }> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.post({ kind: 'embed', texts, as });
    });
  }

  /** Ends the thread after the batch in hand; resolves when it has exited. */
  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      this.post({ kind: 'close' });
    }
    await this.exited;
  }

  private post(message: ToWorker): void {
    this.worker.postMessage(message);
  }
}
