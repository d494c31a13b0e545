import { ELEM, encodeModel } from '@clinicalsuite/kit/onnx';
import ort from 'onnxruntime-node';

/**
 * Cosine scores of one query against every title vector, on onnxruntime's SIMD MatMul (faster than
 * a JavaScript loop over the vectors: README, "How it searches"): a one-node ONNX graph
 * `s = MatMul(m, q)`, m float [n, dim], q float [dim, 1], encoded by the kit's ONNX writer (the
 * graph is fixed and tiny, so a protobuf library would be the only reason for a dependency).
 */

export function scanModel(dim: number): Uint8Array {
  return encodeModel({
    producer: 'clinicalsuite',
    graph: {
      name: 'title_scores',
      nodes: [{ op: 'MatMul', inputs: ['m', 'q'], outputs: ['s'] }],
      inputs: [
        { name: 'm', elemType: ELEM.FLOAT, dims: ['n', dim] },
        { name: 'q', elemType: ELEM.FLOAT, dims: [dim, 1] },
      ],
      outputs: [{ name: 's', elemType: ELEM.FLOAT, dims: ['n', 1] }],
    },
  });
}

export interface VectorScanner {
  /** Dot products of `query` with each `dim`-wide row of `vectors`. */
  scan(vectors: Float32Array, dim: number, query: Float32Array): Promise<Float32Array>;
  dispose(): Promise<void>;
}

export async function loadVectorScanner(dim: number, threads: number): Promise<VectorScanner> {
  const session = await ort.InferenceSession.create(scanModel(dim), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  return {
    async scan(vectors, d, query) {
      const rows = Math.floor(vectors.length / d);
      const out = await session.run({
        m: new ort.Tensor('float32', vectors, [rows, d]),
        q: new ort.Tensor('float32', query, [d, 1]),
      });
      const s = out['s'];
      if (s?.type !== 'float32') throw new Error('the scan model returned no float32 scores');
      return s.data as Float32Array;
    },
    dispose: () => session.release(),
  };
}
