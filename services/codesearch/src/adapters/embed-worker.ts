import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createSentenceEncoder, type EmbedKind, type EncoderSpec } from './sentence-encoder.js';

/**
 * An embedding worker thread (started by embed-workers.ts): one onnxruntime session, one batch at
 * a time, so the service's event loop never waits for the model. The thread ends itself on
 * `close`, after the batch in hand: terminating it while onnxruntime runs aborts the process.
 */

/** What the thread is started with: its session, and its niceness (0: the process's). */
export type WorkerData = EncoderSpec & { readonly nice: number };

export type ToWorker =
  | { readonly kind: 'embed'; readonly texts: readonly string[]; readonly as: EmbedKind }
  | { readonly kind: 'close' };

export type FromWorker =
  | { readonly kind: 'ready' }
  | { readonly kind: 'vectors'; readonly vectors: Float32Array; readonly dim: number }
  | { readonly kind: 'error'; readonly message: string };

const port = parentPort;
if (port === null) throw new Error('embed-worker runs as a worker thread');
const send = (message: FromWorker, transfer: ArrayBuffer[] = []): void => {
  port.postMessage(message, transfer);
};

const { nice, ...spec } = workerData as WorkerData;
// Below the event loop's thread, so a request preempts the titles at once. On Linux, priority 0
// means this thread only (elsewhere the whole process: left alone there).
if (process.platform === 'linux' && nice !== 0) {
  try {
    setPriority(nice);
  } catch {
    // Not permitted here: the thread keeps the process's priority.
  }
}
const encoder = await createSentenceEncoder(spec);
// One batch at a time: the next message waits for this one's answer.
let chain = Promise.resolve();
port.on('message', (message: ToWorker) => {
  chain = chain.then(async () => {
    if (message.kind === 'close') {
      await encoder.release();
      port.close();
      return;
    }
    try {
      const vectors = await encoder.encode(message.texts, message.as);
      send({ kind: 'vectors', vectors, dim: encoder.dim }, [vectors.buffer as ArrayBuffer]);
    } catch (err) {
      send({ kind: 'error', message: (err as Error).message });
    }
  });
});
send({ kind: 'ready' });
