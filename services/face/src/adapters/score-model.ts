/**
 * A two-node ONNX graph written here (no converter, no file): `s = MatMulInteger(m, q)` with
 * m: uint8 [n, dim] (the registry, quantized) and q: int8 [dim, k] (the query faces), s: int32
 * [n, k]. onnxruntime runs it with its SIMD int8 kernels. Protobuf is encoded by hand: the graph
 * is fixed and tiny, so a protobuf library would be the only reason for a dependency.
 */

const ELEM_UINT8 = 2;
const ELEM_INT8 = 3;
const ELEM_INT32 = 6;

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

/** Field `field` as a varint. */
function int(field: number, value: number): number[] {
  return [...varint(field << 3), ...varint(value)];
}

/** Field `field` as length-delimited bytes (strings and embedded messages). */
function bytes(field: number, value: number[] | string): number[] {
  const data = typeof value === 'string' ? [...Buffer.from(value, 'utf8')] : value;
  return [...varint((field << 3) | 2), ...varint(data.length), ...data];
}

function valueInfo(name: string, elemType: number, dims: (number | string)[]): number[] {
  const shape = dims.flatMap((d) => bytes(1, typeof d === 'number' ? int(1, d) : bytes(2, d)));
  const tensorType = [...int(1, elemType), ...bytes(2, shape)];
  return [...bytes(1, name), ...bytes(2, bytes(1, tensorType))];
}

export function scoreModel(dim: number): Uint8Array {
  const node = [...bytes(1, 'm'), ...bytes(1, 'q'), ...bytes(2, 's'), ...bytes(4, 'MatMulInteger')];
  const graph = [
    ...bytes(1, node),
    ...bytes(2, 'registry_scores'),
    ...bytes(11, valueInfo('m', ELEM_UINT8, ['n', dim])),
    ...bytes(11, valueInfo('q', ELEM_INT8, [dim, 'k'])),
    ...bytes(12, valueInfo('s', ELEM_INT32, ['n', 'k'])),
  ];
  const model = [
    ...int(1, 8), // ir_version
    ...bytes(2, 'clinicalsuite'), // producer_name
    ...bytes(7, graph),
    ...bytes(8, [...bytes(1, ''), ...int(2, 17)]), // opset_import: default domain, opset 17
  ];
  return Uint8Array.from(model);
}
