/**
 * A hand-written ONNX protobuf writer: enough of the wire format (varints, length-delimited
 * fields) and of onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
 * ValueInfoProto) to write the small fixed graphs the services build at run time (a MatMul over
 * an index) and the tiny models tests build. It only writes bytes: loading them is the caller's
 * onnxruntime's business, so the kit depends on no ONNX runtime and no protobuf library.
 *
 * Fields are written in field-number order, each as protobuf encodes it, so the bytes are stable.
 */

/** TensorProto.DataType values. */
export const ELEM = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  INT32: 6,
  INT64: 7,
  FLOAT16: 10,
} as const;
export type ElemType = (typeof ELEM)[keyof typeof ELEM];

/** A dimension: a fixed size, or a named symbolic one (`'n'`, `'batch'`). */
export type Dim = number | string;

export interface ValueInfo {
  readonly name: string;
  readonly elemType: ElemType;
  readonly dims: readonly Dim[];
}

/** An attribute: INT (`int`, may be negative), FLOAT (`float`) or INTS (`ints`). */
export type Attribute =
  | { readonly name: string; readonly int: number }
  | { readonly name: string; readonly float: number }
  | { readonly name: string; readonly ints: readonly number[] };

export interface NodeSpec {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name?: string;
  readonly attributes?: readonly Attribute[];
  /** The operator set's domain (`com.microsoft` for onnxruntime's contrib ops); default ai.onnx. */
  readonly domain?: string;
}

/** A constant tensor, stored as raw little-endian data; `dims` empty for a scalar. */
export type TensorSpec = ValueTensorSpec | RawTensorSpec;

/** A tensor given as numbers (small tensors). */
export interface ValueTensorSpec {
  readonly name: string;
  readonly elemType: typeof ELEM.FLOAT | typeof ELEM.INT32 | typeof ELEM.INT64;
  readonly dims: readonly number[];
  readonly values: readonly number[];
}

/** A tensor given as its raw little-endian bytes (weights: written as they are, never copied). */
export interface RawTensorSpec {
  readonly name: string;
  readonly elemType: ElemType;
  readonly dims: readonly number[];
  readonly raw: Uint8Array;
}

export interface GraphSpec {
  readonly name: string;
  readonly nodes: readonly NodeSpec[];
  readonly initializers?: readonly TensorSpec[];
  readonly inputs: readonly ValueInfo[];
  readonly outputs: readonly ValueInfo[];
}

export interface ModelSpec {
  readonly graph: GraphSpec;
  readonly producer: string;
  /** Default 8. */
  readonly irVersion?: number;
  /** Of the default (ai.onnx) domain; default 17. */
  readonly opset?: number;
  /** Other operator sets the nodes use, e.g. `{ domain: 'com.microsoft', version: 1 }`. */
  readonly opsetImports?: readonly { readonly domain: string; readonly version: number }[];
}

// ---- wire format ----

/** A non-negative integer as a base-128 varint (exact up to 2^53). */
export function varint(n: number): number[] {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`varint of ${String(n)}`);
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

/** Field `field` as a varint (wire type 0). */
export function intField(field: number, value: number): number[] {
  return [...varint(field << 3), ...varint(value)];
}

/** A signed 64-bit integer as protobuf writes an int64: negatives as ten-byte two's complement. */
export function signedVarint(n: number): number[] {
  if (!Number.isSafeInteger(n)) throw new RangeError(`int64 of ${String(n)}`);
  if (n >= 0) return varint(n);
  const out: number[] = [];
  let v = BigInt.asUintN(64, BigInt(n));
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

/** Field `field` as a 32-bit float (wire type 5). */
export function floatField(field: number, value: number): number[] {
  const raw = Buffer.alloc(4);
  raw.writeFloatLE(value);
  return [...varint((field << 3) | 5), ...raw];
}

/** Field `field` as length-delimited bytes (wire type 2): strings (UTF-8) and embedded messages. */
export function bytesField(field: number, value: readonly number[] | string | Uint8Array): number[] {
  const data = typeof value === 'string' ? [...Buffer.from(value, 'utf8')] : [...value];
  const out = [...varint((field << 3) | 2), ...varint(data.length)];
  for (const b of data) out.push(b);
  return out;
}

// ---- onnx.proto messages ----

/** ValueInfoProto: name, TypeProto.tensor_type { elem_type, shape { dim { dim_value | dim_param } } }. */
export function encodeValueInfo(info: ValueInfo): number[] {
  const shape = info.dims.flatMap((d) =>
    bytesField(1, typeof d === 'number' ? intField(1, d) : bytesField(2, d)),
  );
  const tensorType = [...intField(1, info.elemType), ...bytesField(2, shape)];
  return [...bytesField(1, info.name), ...bytesField(2, bytesField(1, tensorType))];
}

/** AttributeProto: name, f, i or ints, type (FLOAT 1, INT 2, INTS 7). */
export function encodeAttribute(attribute: Attribute): number[] {
  const name = bytesField(1, attribute.name);
  if ('int' in attribute)
    return [...name, ...varint(3 << 3), ...signedVarint(attribute.int), ...intField(20, 2)];
  if ('float' in attribute) return [...name, ...floatField(2, attribute.float), ...intField(20, 1)];
  return [
    ...name,
    ...attribute.ints.flatMap((v) => [...varint(8 << 3), ...signedVarint(v)]),
    ...intField(20, 7),
  ];
}

/** NodeProto: inputs, outputs, name, op_type, attributes, domain. */
export function encodeNode(node: NodeSpec): number[] {
  return [
    ...node.inputs.flatMap((i) => bytesField(1, i)),
    ...node.outputs.flatMap((o) => bytesField(2, o)),
    ...(node.name === undefined ? [] : bytesField(3, node.name)),
    ...bytesField(4, node.op),
    ...(node.attributes ?? []).flatMap((a) => bytesField(5, encodeAttribute(a))),
    ...(node.domain === undefined ? [] : bytesField(7, node.domain)),
  ];
}

/** Pieces of an encoded message: small parts as numbers, weights as the caller's own bytes. */
type Pieces = (readonly number[] | Uint8Array)[];

const piecesLength = (pieces: Pieces): number => pieces.reduce((n, p) => n + p.length, 0);

/** Field `field` holding the message `pieces` (length-delimited), without copying them. */
function messageField(field: number, pieces: Pieces): Pieces {
  return [[...varint((field << 3) | 2), ...varint(piecesLength(pieces))], ...pieces];
}

function tensorRaw(tensor: TensorSpec): Uint8Array {
  if ('raw' in tensor) return tensor.raw;
  const width = tensor.elemType === ELEM.INT64 ? 8 : 4;
  const raw = Buffer.alloc(tensor.values.length * width);
  tensor.values.forEach((v, i) => {
    if (tensor.elemType === ELEM.INT64) raw.writeBigInt64LE(BigInt(v), i * 8);
    else if (tensor.elemType === ELEM.INT32) raw.writeInt32LE(v, i * 4);
    else raw.writeFloatLE(v, i * 4);
  });
  return raw;
}

function tensorPieces(tensor: TensorSpec): Pieces {
  return [
    [
      ...tensor.dims.flatMap((d) => intField(1, d)),
      ...intField(2, tensor.elemType),
      ...bytesField(8, tensor.name),
    ],
    ...messageField(9, [tensorRaw(tensor)]),
  ];
}

/** TensorProto: dims, data_type, name, raw_data (little-endian). */
export function encodeTensor(tensor: TensorSpec): number[] {
  return tensorPieces(tensor).flatMap((p) => [...p]);
}

function graphPieces(graph: GraphSpec): Pieces {
  return [
    [...graph.nodes.flatMap((n) => bytesField(1, encodeNode(n))), ...bytesField(2, graph.name)],
    ...(graph.initializers ?? []).flatMap((t) => messageField(5, tensorPieces(t))),
    [
      ...graph.inputs.flatMap((i) => bytesField(11, encodeValueInfo(i))),
      ...graph.outputs.flatMap((o) => bytesField(12, encodeValueInfo(o))),
    ],
  ];
}

/** GraphProto: nodes, name, initializers, inputs, outputs. */
export function encodeGraph(graph: GraphSpec): number[] {
  return graphPieces(graph).flatMap((p) => [...p]);
}

/**
 * ModelProto (ir_version, producer_name, graph, opset_import: the default domain, then the
 * others) as a list of byte arrays to write in order: weights given as `raw` are not copied, so a
 * model of hundreds of megabytes is written without holding it twice.
 */
export function encodeModelParts(model: ModelSpec): Uint8Array[] {
  const pieces: Pieces = [
    [...intField(1, model.irVersion ?? 8), ...bytesField(2, model.producer)],
    ...messageField(7, graphPieces(model.graph)),
    bytesField(8, [...bytesField(1, ''), ...intField(2, model.opset ?? 17)]),
    ...(model.opsetImports ?? []).map((o) =>
      bytesField(8, [...bytesField(1, o.domain), ...intField(2, o.version)]),
    ),
  ];
  return pieces.filter((p) => p.length > 0).map((p) => (p instanceof Uint8Array ? p : Uint8Array.from(p)));
}

/** ModelProto as one byte array (encodeModelParts joined). */
export function encodeModel(model: ModelSpec): Uint8Array {
  return Buffer.concat(encodeModelParts(model));
}
