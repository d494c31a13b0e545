import ort from 'onnxruntime-node';

/**
 * onnxruntime-node sessions: the CUDA execution provider when asked for and present (a GPU node
 * with the CUDA build of onnxruntime's provider libraries), else the CPU provider; threads from
 * config. The device actually used is reported (`cpu` or `cuda:<id>`).
 */

export type ExecutionDevice = 'auto' | 'cpu' | 'cuda';

export interface SessionOptions {
  readonly device: ExecutionDevice;
  readonly cudaDeviceId?: number;
  /** Intra-op threads (per session). */
  readonly threads: number;
}

export interface LoadedSession {
  readonly session: ort.InferenceSession;
  readonly device: string;
}

export async function loadSession(path: string, options: SessionOptions): Promise<LoadedSession> {
  const base: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    // Warnings such as unused initializers of converted models are noise in the service's logs.
    logSeverityLevel: 3,
  };
  if (options.device !== 'cpu') {
    const deviceId = options.cudaDeviceId ?? 0;
    try {
      const session = await ort.InferenceSession.create(path, {
        ...base,
        executionProviders: [{ name: 'cuda', deviceId }],
      });
      return { session, device: `cuda:${String(deviceId)}` };
    } catch (error) {
      if (options.device === 'cuda') {
        throw new Error(
          `the CUDA execution provider is not usable (${error instanceof Error ? error.message : String(error)}); ` +
            'install onnxruntime-node with its CUDA provider libraries or set FACE_DEVICE=cpu',
          { cause: error },
        );
      }
    }
  }
  const session = await ort.InferenceSession.create(path, { ...base, executionProviders: ['cpu'] });
  return { session, device: 'cpu' };
}

export function tensor(data: Float32Array, dims: readonly number[]): ort.Tensor {
  return new ort.Tensor('float32', data, dims);
}

/** The float32 data of an output, or an error naming what the model gave instead. */
export function floatOutput(outputs: ort.InferenceSession.ReturnType, name: string): Float32Array {
  const t = outputs[name];
  if (t === undefined) throw new Error(`the model has no output ${name}`);
  // By type, not instanceof: the native addon's typed arrays may come from another realm (vm contexts).
  if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, float32 expected`);
  return t.data as Float32Array;
}
