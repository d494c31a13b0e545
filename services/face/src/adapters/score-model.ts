import { ELEM, encodeModel } from '@clinicalsuite/kit/onnx';

/**
 * A one-node ONNX graph built here (no converter, no file): `s = MatMulInteger(m, q)` with
 * m: uint8 [n, dim] (the registry, quantized) and q: int8 [dim, k] (the query faces), s: int32
 * [n, k]. onnxruntime runs it with its SIMD int8 kernels. The kit's writer encodes the protobuf:
 * the graph is fixed and tiny, so a protobuf library would be the only reason for a dependency.
 */
export function scoreModel(dim: number): Uint8Array {
  return encodeModel({
    producer: 'clinicalsuite',
    graph: {
      name: 'registry_scores',
      nodes: [{ op: 'MatMulInteger', inputs: ['m', 'q'], outputs: ['s'] }],
      inputs: [
        { name: 'm', elemType: ELEM.UINT8, dims: ['n', dim] },
        { name: 'q', elemType: ELEM.INT8, dims: [dim, 'k'] },
      ],
      outputs: [{ name: 's', elemType: ELEM.INT32, dims: ['n', 'k'] }],
    },
  });
}
