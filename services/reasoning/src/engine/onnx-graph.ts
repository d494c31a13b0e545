import {
  bytesField,
  ELEM,
  encodeModel,
  intField,
  varint,
  type NodeSpec,
  type TensorSpec,
} from '@clinicalsuite/kit/onnx';
import { PREDICTIVE_CLIP } from './information-gain.js';
import type { CompiledModel } from './model.js';

/**
 * The compiled model as an ONNX graph, written with the kit's encoder (no converter, no file). Pure.
 *
 * Inputs (float32, soft values allowed — see model.ts, "Evidence"):
 *   present [batch, F]  certainty of a "present" finding per feature, else 0
 *   absent  [batch, F]  certainty of an "absent" finding per feature, else 0
 * Constants: the log-likelihood-ratio tables against the unknown hypothesis [F, H], log priors [H],
 * the calibration exponent α, and for information gain P(f | h) and H_b(P(f | h)) in bits [F, H].
 * Outputs:
 *   llr       [batch, H]  present·LLR₊ + absent·LLR₋ (uncalibrated; unknown's column is 0)
 *   posterior [batch, H]  Softmax(log π + α·llr), unknown last
 *   gain      [batch, F]  H_b(clip(posterior·Pᵀ)) − posterior·H_b(P)ᵀ, expected information gain (bits)
 *
 *   present ─MatMul(LLR₊)─┐
 *                         Add ─► llr ─Mul(α)─Add(log π)─Softmax─► posterior ─┬─Gemm(Pᵀ)──Clip─H_b─┐
 *   absent ──MatMul(LLR₋)─┘                                                  └─Gemm(H_b(P)ᵀ)─────Sub─► gain
 *
 * The tables are float32 here (float64 in the reference). The kit's encoder writes the graph and its
 * small constants; the four [F, H] tables are appended as raw bytes (`tableInitializers`), so a base
 * of a million table cells is encoded in milliseconds rather than by the encoder's per-byte arrays.
 *
 * A protobuf message cannot exceed 2 GiB, which four [F, H] tables pass at about 134 million cells
 * (the whole HPO import merged with the primary-care base is 12,706 x 11,355). `buildScoringGraphFiles`
 * writes the same graph with the tables as ONNX external data: each table's TensorProto names a
 * file, an offset and a length, and the bytes go in that file beside the model.
 */

export const GRAPH_INPUTS = { present: 'present', absent: 'absent' } as const;
export const GRAPH_OUTPUTS = { llr: 'llr', posterior: 'posterior', gain: 'gain' } as const;
export const OPSET = 17;

const LN2 = Math.LN2;

export function buildScoringGraph(model: CompiledModel): Uint8Array {
  const { head, tables, dims } = scoringGraphParts(model);
  return appendToGraph(head, tableInitializers(tables, dims));
}

/** Alignment of each table in the external data file (a page, so the file can be memory-mapped). */
export const EXTERNAL_TABLE_ALIGNMENT = 4096;

/**
 * The same graph with its four tables as external data in `location` (a file name, resolved beside
 * the model file): the model bytes, and where each table goes in that file (`offset` ascending, each
 * aligned to `EXTERNAL_TABLE_ALIGNMENT`; zeros between) with a function that makes its bytes, so a
 * writer holds one table's float32 copy at a time.
 */
export function buildScoringGraphFiles(
  model: CompiledModel,
  location: string,
): { model: Uint8Array; tables: { offset: number; length: number; bytes: () => Buffer }[] } {
  const { head, tables, dims } = scoringGraphParts(model);
  const placed: { offset: number; length: number; bytes: () => Buffer }[] = [];
  const fields: Buffer[] = [];
  let offset = 0;
  for (const [name, values] of tables) {
    const length = values.length * 4;
    placed.push({ offset, length, bytes: () => float32Bytes(values) });
    fields.push(externalTableInitializer(name, dims, location, offset, length));
    offset += Math.ceil(length / EXTERNAL_TABLE_ALIGNMENT) * EXTERNAL_TABLE_ALIGNMENT;
  }
  return { model: appendToGraph(head, Buffer.concat(fields)), tables: placed };
}

function scoringGraphParts(model: CompiledModel): {
  head: Uint8Array;
  tables: [string, Float64Array][];
  dims: number[];
} {
  const F = model.features.length;
  const H = model.hypotheses;
  const scalar = (name: string, value: number): TensorSpec => ({
    name,
    elemType: ELEM.FLOAT,
    dims: [],
    values: [value],
  });
  const tables: [string, Float64Array][] = [
    ['llr_present', model.llrPresent],
    ['llr_absent', model.llrAbsent],
    ['p_feature', model.probability],
    ['entropy_bits', model.entropyBits],
  ];
  const initializers: TensorSpec[] = [
    { name: 'log_prior', elemType: ELEM.FLOAT, dims: [H], values: Array.from(model.logPrior) },
    scalar('alpha', model.calibration.alpha),
    scalar('clip_lo', PREDICTIVE_CLIP),
    scalar('clip_hi', 1 - PREDICTIVE_CLIP),
    scalar('one', 1),
    scalar('minus_inv_ln2', -1 / LN2),
  ];
  const node = (
    op: string,
    inputs: string[],
    output: string,
    attributes?: NodeSpec['attributes'],
  ): NodeSpec => ({
    op,
    inputs,
    outputs: [output],
    name: output,
    ...(attributes === undefined ? {} : { attributes }),
  });
  const nodes: NodeSpec[] = [
    node('MatMul', [GRAPH_INPUTS.present, 'llr_present'], 'llr_p'),
    node('MatMul', [GRAPH_INPUTS.absent, 'llr_absent'], 'llr_a'),
    node('Add', ['llr_p', 'llr_a'], GRAPH_OUTPUTS.llr),
    node('Mul', [GRAPH_OUTPUTS.llr, 'alpha'], 'llr_scaled'),
    node('Add', ['llr_scaled', 'log_prior'], 'logits'),
    node('Softmax', ['logits'], GRAPH_OUTPUTS.posterior, [{ name: 'axis', int: 1 }]),
    // Information gain: P(f) = posterior · Pᵀ and E_h[H_b(P(f|h))] = posterior · H_b(P)ᵀ.
    node('Gemm', [GRAPH_OUTPUTS.posterior, 'p_feature'], 'pf', [{ name: 'transB', int: 1 }]),
    node('Gemm', [GRAPH_OUTPUTS.posterior, 'entropy_bits'], 'conditional_entropy', [
      { name: 'transB', int: 1 },
    ]),
    node('Clip', ['pf', 'clip_lo', 'clip_hi'], 'pf_clipped'),
    node('Sub', ['one', 'pf_clipped'], 'qf'),
    node('Log', ['pf_clipped'], 'log_pf'),
    node('Log', ['qf'], 'log_qf'),
    node('Mul', ['pf_clipped', 'log_pf'], 'pf_log_pf'),
    node('Mul', ['qf', 'log_qf'], 'qf_log_qf'),
    node('Add', ['pf_log_pf', 'qf_log_qf'], 'neg_entropy_nats'),
    node('Mul', ['neg_entropy_nats', 'minus_inv_ln2'], 'predictive_entropy'),
    node('Sub', ['predictive_entropy', 'conditional_entropy'], GRAPH_OUTPUTS.gain),
  ];
  const head = encodeModel({
    producer: 'clinicalsuite-reasoning',
    opset: OPSET,
    graph: {
      name: `reasoning_${model.fingerprint}`,
      nodes,
      initializers,
      inputs: [
        { name: GRAPH_INPUTS.present, elemType: ELEM.FLOAT, dims: ['batch', F] },
        { name: GRAPH_INPUTS.absent, elemType: ELEM.FLOAT, dims: ['batch', F] },
      ],
      outputs: [
        { name: GRAPH_OUTPUTS.llr, elemType: ELEM.FLOAT, dims: ['batch', H] },
        { name: GRAPH_OUTPUTS.posterior, elemType: ELEM.FLOAT, dims: ['batch', H] },
        { name: GRAPH_OUTPUTS.gain, elemType: ELEM.FLOAT, dims: ['batch', F] },
      ],
    },
  });
  return { head, tables, dims: [F, H] };
}

/** Little-endian float32 bytes of a table. */
function float32Bytes(values: Float64Array): Buffer {
  const raw = Buffer.alloc(values.length * 4);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  values.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return raw;
}

/**
 * A GraphProto `initializer` field (5) whose TensorProto keeps its data outside the model:
 * dims (1), data_type (2), name (8), external_data (13: StringStringEntryProto { key (1), value
 * (2) } for location, offset and length) and data_location (14) = EXTERNAL (1).
 */
function externalTableInitializer(
  name: string,
  dims: readonly number[],
  location: string,
  offset: number,
  length: number,
): Buffer {
  const entry = (key: string, value: string) =>
    bytesField(13, [...bytesField(1, key), ...bytesField(2, value)]);
  const tensor = [
    ...dims.flatMap((d) => intField(1, d)),
    ...intField(2, ELEM.FLOAT),
    ...bytesField(8, name),
    ...entry('location', location),
    ...entry('offset', String(offset)),
    ...entry('length', String(length)),
    ...intField(14, 1),
  ];
  return Buffer.from(bytesField(5, tensor));
}

/**
 * GraphProto `initializer` fields (5) for float32 tables, as bytes: TensorProto { dims (1),
 * data_type (2), name (8), raw_data (9, little-endian) }, the fields the kit's `encodeTensor`
 * writes, with the data copied in one piece.
 */
export function tableInitializers(
  tables: readonly (readonly [string, Float64Array])[],
  dims: readonly number[],
): Buffer {
  return Buffer.concat(
    tables.map(([name, values]) => {
      const raw = float32Bytes(values);
      const header = [
        ...dims.flatMap((d) => intField(1, d)),
        ...intField(2, ELEM.FLOAT),
        ...bytesField(8, name),
        ...varint((9 << 3) | 2),
        ...varint(raw.length),
      ];
      const tensorLength = header.length + raw.length;
      return Buffer.concat([Buffer.from([...varint((5 << 3) | 2), ...varint(tensorLength), ...header]), raw]);
    }),
  );
}

/**
 * A model with more graph fields: a second ModelProto `graph` field (7) holding them. Protobuf
 * parsers merge repeated occurrences of an embedded message field, appending its repeated fields,
 * so the model reads as one graph whose initializers are the kit-encoded ones and these.
 */
export function appendToGraph(model: Uint8Array, graphFields: Uint8Array): Uint8Array {
  const tag = Buffer.from([...varint((7 << 3) | 2), ...varint(graphFields.length)]);
  return Buffer.concat([model, tag, graphFields]);
}
