import ort from 'onnxruntime-node';

/**
 * Cosine scores of one query against every title vector, on onnxruntime's SIMD MatMul (several
 * times faster than a JavaScript loop over 46,881 x 384 floats): a one-node ONNX graph
 * `s = MatMul(m, q)`, m float [n, dim], q float [dim, 1], encoded here (the graph is fixed and
 * tiny, so a protobuf library would be the only reason for a dependency).
 */

const ELEM_FLOAT = 1;

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

const int = (field: number, value: number): number[] => [...varint(field << 3), ...varint(value)];

function bytes(field: number, value: number[] | string): number[] {
  const data = typeof value === 'string' ? [...Buffer.from(value, 'utf8')] : value;
  return [...varint((field << 3) | 2), ...varint(data.length), ...data];
}

function valueInfo(name: string, dims: (number | string)[]): number[] {
  const shape = dims.flatMap((d) => bytes(1, typeof d === 'number' ? int(1, d) : bytes(2, d)));
  const tensorType = [...int(1, ELEM_FLOAT), ...bytes(2, shape)];
  return [...bytes(1, name), ...bytes(2, bytes(1, tensorType))];
}

export function scanModel(dim: number): Uint8Array {
  const node = [...bytes(1, 'm'), ...bytes(1, 'q'), ...bytes(2, 's'), ...bytes(4, 'MatMul')];
  const graph = [
    ...bytes(1, node),
    ...bytes(2, 'title_scores'),
    ...bytes(11, valueInfo('m', ['n', dim])),
    ...bytes(11, valueInfo('q', [dim, 1])),
    ...bytes(12, valueInfo('s', ['n', 1])),
  ];
  return Uint8Array.from([
    ...int(1, 8), // ir_version
    ...bytes(2, 'clinicalsuite'),
    ...bytes(7, graph),
    ...bytes(8, [...bytes(1, ''), ...int(2, 17)]), // opset 17
  ]);
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
