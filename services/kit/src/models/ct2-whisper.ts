/**
 * Converts a CTranslate2 (faster-whisper) Whisper model directory into whisper.cpp's ggml model
 * file, the format the stt service runs (services/stt/README.md, "Whisper"). The Whisper weights
 * the package registries hold are CTranslate2 conversions; this turns them into the file that
 * `STT_WHISPER_MODEL` names. Pure TypeScript, no Python.
 *
 * Input (the directory): `model.bin` (or its pieces `model.bin.part1`, `.part2` ..., as some
 * packages split it), and the vocabulary as `vocabulary.json`, `vocabulary.txt` or
 * `tokenizer.json`.
 *
 * CTranslate2's `model.bin` (binary versions 4 to 6, little-endian): uint32 version, the spec's
 * name (a string: uint16 length counting a closing NUL, the bytes, the NUL), uint32 revision,
 * uint32 variable count, then per variable: name (string), uint8 rank, rank × uint32 dims, uint8
 * dtype (0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16), uint32 byte size, the data;
 * then uint32 alias count and (alias, target) string pairs. Scalars (`encoder/num_heads` ...) are
 * rank-0 variables. int8 weights carry a `weight_scale` per row (value = int8 / scale).
 *
 * Tensor mapping (CTranslate2 → whisper.cpp; both store a linear layer's weight as [out, in]):
 *
 * | CTranslate2                                           | whisper.cpp                                      |
 * | ----------------------------------------------------- | ------------------------------------------------ |
 * | encoder/conv{1,2}/{weight,bias}                       | encoder.conv{1,2}.{weight,bias} (bias as [n, 1]) |
 * | encoder/position_encodings/encodings (else sinusoids) | encoder.positional_embedding                     |
 * | {enc,dec}/layer_N/self_attention/linear_0 (q,k,v rows)| blocks.N.attn.{query,key,value} (key: no bias)   |
 * | …/self_attention/linear_1, layer_norm                 | blocks.N.attn.out, blocks.N.attn_ln              |
 * | decoder/layer_N/attention/linear_0, linear_1 (k,v)    | blocks.N.cross_attn.query, .key, .value          |
 * | …/attention/linear_2, layer_norm                      | blocks.N.cross_attn.out, blocks.N.cross_attn_ln  |
 * | …/ffn/linear_0, linear_1, layer_norm                  | blocks.N.mlp.0, mlp.2, mlp_ln                    |
 * | encoder/layer_norm, decoder/layer_norm                | encoder.ln_post, decoder.ln                      |
 * | decoder/embeddings/weight, position_encodings         | decoder.token_embedding.weight, .positional_embedding |
 *
 * Layer norms are `gamma`/`beta` → `weight`/`bias`.
 *
 * The ggml file: magic 0x67676d6c, 11 int32 hyperparameters (n_vocab, n_audio_ctx, n_audio_state,
 * n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels,
 * ftype), the mel filterbank (n_mel, 201, float32: Slaney-scale, Slaney-normalised triangles over a
 * 400-point FFT at 16 kHz, as Whisper's own), the vocabulary (count = the id of <|endoftext|>, then
 * each token's raw bytes: GPT-2's byte-to-unicode mapping undone; whisper.cpp adds the special
 * tokens itself), then each tensor: n_dims, name length, type (0 f32, 1 f16), the dims fastest
 * first, the name, the data. With ftype 1 (f16) the matrices are f16 and vectors, conv biases and
 * positional embeddings f32, which is what whisper.cpp's loader checks.
 */
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class Ct2WhisperError extends Error {
  override readonly name = 'Ct2WhisperError';
}

export enum Ct2DType {
  Float32 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Float16 = 4,
  BFloat16 = 5,
}

const DTYPES: readonly Ct2DType[] = [
  Ct2DType.Float32,
  Ct2DType.Int8,
  Ct2DType.Int16,
  Ct2DType.Int32,
  Ct2DType.Float16,
  Ct2DType.BFloat16,
];
const DTYPE_BYTES: Record<Ct2DType, number> = { 0: 4, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2 };

export interface Ct2Variable {
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: Ct2DType;
  readonly data: Buffer;
}

export interface Ct2Model {
  readonly version: number;
  readonly spec: string;
  readonly revision: number;
  readonly variables: ReadonlyMap<string, Ct2Variable>;
  readonly aliases: ReadonlyMap<string, string>;
}

/** Parses a CTranslate2 `model.bin` (the variables' data are views into `bytes`). */
export function parseCt2Model(bytes: Buffer): Ct2Model {
  let p = 0;
  const need = (n: number, what: string): void => {
    if (p + n > bytes.length) {
      throw new Ct2WhisperError(`the CTranslate2 model is truncated (reading ${what} at byte ${String(p)})`);
    }
  };
  const u8 = (what: string): number => {
    need(1, what);
    return bytes.readUInt8(p++);
  };
  const u32 = (what: string): number => {
    need(4, what);
    const v = bytes.readUInt32LE(p);
    p += 4;
    return v;
  };
  const str = (what: string): string => {
    need(2, what);
    const n = bytes.readUInt16LE(p);
    p += 2;
    need(n, what);
    const s = bytes.toString('utf8', p, p + Math.max(0, n - 1));
    p += n;
    return s;
  };
  const version = u32('the version');
  if (version < 4 || version > 6) {
    throw new Ct2WhisperError(
      `not a CTranslate2 model this converter reads (binary version ${String(version)}; 4 to 6 are read)`,
    );
  }
  const spec = str('the spec name');
  const revision = u32('the revision');
  const count = u32('the variable count');
  const variables = new Map<string, Ct2Variable>();
  for (let i = 0; i < count; i++) {
    const name = str('a variable name');
    const rank = u8(`${name}'s rank`);
    const shape: number[] = [];
    for (let d = 0; d < rank; d++) shape.push(u32(`${name}'s shape`));
    const code = u8(`${name}'s dtype`);
    const dtype = DTYPES[code];
    if (dtype === undefined) throw new Ct2WhisperError(`${name} has an unknown dtype ${String(code)}`);
    const size = u32(`${name}'s size`);
    const elements = shape.reduce((a, b) => a * b, 1);
    if (size !== elements * DTYPE_BYTES[dtype]) {
      throw new Ct2WhisperError(`${name}: ${String(size)} bytes for shape [${shape.join(', ')}]`);
    }
    need(size, `${name}'s data`);
    variables.set(name, { name, shape, dtype, data: bytes.subarray(p, p + size) });
    p += size;
  }
  const aliases = new Map<string, string>();
  if (p < bytes.length) {
    const n = u32('the alias count');
    for (let i = 0; i < n; i++) aliases.set(str('an alias'), str('an alias target'));
  }
  return { version, spec, revision, variables, aliases };
}

// --- half floats -------------------------------------------------------------------------------

let HALF_TABLE: Float32Array | undefined;
function halfTable(): Float32Array {
  if (HALF_TABLE) return HALF_TABLE;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    t[h] =
      exp === 0
        ? sign * frac * 2 ** -24
        : exp === 31
          ? frac === 0
            ? sign * Infinity
            : NaN
          : sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  HALF_TABLE = t;
  return t;
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** IEEE binary16 bits of `value`, rounded to nearest even. */
export function toHalf(value: number): number {
  F32[0] = value;
  const x = U32[0] ?? 0;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) === 1)) h += 1;
    return sign | h;
  }
  let h = mant >>> 13;
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) {
    h += 1;
    if (h === 0x400) {
      h = 0;
      e += 1;
      if (e >= 31) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | h;
}

// --- tensors -----------------------------------------------------------------------------------

/** A tensor's values in row-major order with its numpy-order shape (slowest first). */
interface Tensor {
  readonly shape: readonly number[];
  readonly values: Float32Array;
}

function variableValues(v: Ct2Variable, scale: Ct2Variable | undefined): Float32Array {
  const n = v.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  const d = v.data;
  switch (v.dtype) {
    case Ct2DType.Float32:
      for (let i = 0; i < n; i++) out[i] = d.readFloatLE(4 * i);
      break;
    case Ct2DType.Float16: {
      const t = halfTable();
      for (let i = 0; i < n; i++) out[i] = t[d.readUInt16LE(2 * i)] ?? 0;
      break;
    }
    case Ct2DType.BFloat16:
      for (let i = 0; i < n; i++) {
        U32[0] = d.readUInt16LE(2 * i) << 16;
        out[i] = F32[0] ?? 0;
      }
      break;
    case Ct2DType.Int8: {
      if (!scale) throw new Ct2WhisperError(`${v.name} is int8 without a weight_scale`);
      const scales = variableValues(scale, undefined);
      const cols = v.shape[v.shape.length - 1] ?? 1;
      for (let i = 0; i < n; i++) out[i] = d.readInt8(i) / (scales[Math.floor(i / cols)] ?? 1);
      break;
    }
    case Ct2DType.Int16:
      for (let i = 0; i < n; i++) out[i] = d.readInt16LE(2 * i);
      break;
    case Ct2DType.Int32:
      for (let i = 0; i < n; i++) out[i] = d.readInt32LE(4 * i);
      break;
  }
  return out;
}

class Ct2Reader {
  constructor(private readonly model: Ct2Model) {}
  variable(name: string): Ct2Variable | undefined {
    return this.model.variables.get(this.model.aliases.get(name) ?? name);
  }
  has(name: string): boolean {
    return this.variable(name) !== undefined;
  }
  tensor(name: string): Tensor {
    const v = this.variable(name);
    if (!v) throw new Ct2WhisperError(`the CTranslate2 Whisper model has no variable ${name}`);
    const scaleName = name.endsWith('/weight') ? `${name.slice(0, -'weight'.length)}weight_scale` : '';
    return { shape: v.shape, values: variableValues(v, this.variable(scaleName)) };
  }
  scalar(name: string): number {
    const t = this.tensor(name);
    if (t.values.length !== 1) throw new Ct2WhisperError(`${name} is not a scalar`);
    return t.values[0] ?? 0;
  }
}

/** Rows [part × n/parts, (part + 1) × n/parts) of a fused tensor (first dimension split). */
function rows(t: Tensor, part: number, parts: number): Tensor {
  const first = t.shape[0] ?? 0;
  if (first % parts !== 0)
    throw new Ct2WhisperError(`cannot split ${String(first)} rows in ${String(parts)}`);
  const n = first / parts;
  const rowSize = t.values.length / first;
  return {
    shape: [n, ...t.shape.slice(1)],
    values: t.values.subarray(part * n * rowSize, (part + 1) * n * rowSize),
  };
}

/** Whisper's sinusoidal position embedding (the encoder's, when the model does not store it). */
export function whisperSinusoids(length: number, channels: number): Float32Array {
  const half = channels / 2;
  const inc = Math.log(10_000) / (half - 1);
  const out = new Float32Array(length * channels);
  for (let t = 0; t < length; t++) {
    for (let i = 0; i < half; i++) {
      const x = t * Math.exp(-inc * i);
      out[t * channels + i] = Math.sin(x);
      out[t * channels + half + i] = Math.cos(x);
    }
  }
  return out;
}

/** Whisper's mel filterbank (librosa's `filters.mel` with Slaney scale and norm), [nMels, 201]. */
export function whisperMelFilters(nMels: number, nFft = 400, sampleRate = 16_000): Float32Array {
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  const hzToMel = (f: number): number =>
    f >= minLogHz ? minLogMel + Math.log(f / minLogHz) / logStep : f / fSp;
  const melToHz = (m: number): number =>
    m >= minLogMel ? minLogHz * Math.exp(logStep * (m - minLogMel)) : fSp * m;
  const bins = 1 + Math.floor(nFft / 2);
  const fft = Array.from({ length: bins }, (_, k) => (k * sampleRate) / 2 / (bins - 1));
  const top = hzToMel(sampleRate / 2);
  const melF = Array.from({ length: nMels + 2 }, (_, i) => melToHz((top * i) / (nMels + 1)));
  const out = new Float32Array(nMels * bins);
  for (let m = 0; m < nMels; m++) {
    const [lo, mid, hi] = [melF[m] ?? 0, melF[m + 1] ?? 0, melF[m + 2] ?? 0];
    const enorm = 2 / (hi - lo);
    for (let k = 0; k < bins; k++) {
      const f = fft[k] ?? 0;
      const lower = (f - lo) / (mid - lo);
      const upper = (hi - f) / (hi - mid);
      out[m * bins + k] = Math.max(0, Math.min(lower, upper)) * enorm;
    }
  }
  return out;
}

// --- vocabulary --------------------------------------------------------------------------------

/** GPT-2's byte-level mapping inverted: the character that stands for a byte → the byte. */
function unicodeToByte(): Map<string, number> {
  const direct: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) direct.push(b);
  for (let b = 0xa1; b <= 0xac; b++) direct.push(b);
  for (let b = 0xae; b <= 0xff; b++) direct.push(b);
  const map = new Map<string, number>();
  for (const b of direct) map.set(String.fromCharCode(b), b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!direct.includes(b)) map.set(String.fromCharCode(256 + n++), b);
  }
  return map;
}

/** A token's raw bytes from its byte-level string. */
export function gpt2TokenBytes(token: string, table = unicodeToByte()): Buffer {
  const out: number[] = [];
  for (const ch of token) {
    const b = table.get(ch);
    if (b === undefined) return Buffer.from(token, 'utf8'); // not byte-level (a special token)
    out.push(b);
  }
  return Buffer.from(out);
}

const VOCABULARY_FILES = ['vocabulary.json', 'vocabulary.txt', 'tokenizer.json'] as const;

/**
 * The vocabulary in id order from the bytes of `name` (a path or URI ending in `vocabulary.json`:
 * a JSON list; `tokenizer.json`: the Hugging Face tokenizer's vocab and added tokens; anything
 * else: `vocabulary.txt`, one token a line).
 */
export function parseCt2Vocabulary(bytes: Buffer, name: string): string[] {
  const text = bytes.toString('utf8');
  if (name.endsWith('vocabulary.json')) return JSON.parse(text) as string[];
  if (name.endsWith('tokenizer.json')) {
    const t = JSON.parse(text) as {
      model: { vocab: Record<string, number> };
      added_tokens?: { id: number; content: string }[];
    };
    const out: (string | undefined)[] = [];
    for (const [token, id] of Object.entries(t.model.vocab)) out[id] = token;
    for (const a of t.added_tokens ?? []) out[a.id] = a.content;
    return Array.from(out, (token) => token ?? '');
  }
  // One token a line; a token may be empty (a blank line), so only the final newline is dropped.
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The vocabulary in id order, as CTranslate2 stores it beside the model. */
export function readCt2Vocabulary(dir: string): string[] {
  for (const name of VOCABULARY_FILES) {
    const path = join(dir, name);
    if (existsSync(path)) return parseCt2Vocabulary(readFileSync(path), name);
  }
  throw new Ct2WhisperError(`${dir} holds no vocabulary (vocabulary.json, vocabulary.txt or tokenizer.json)`);
}

// --- the ggml file -----------------------------------------------------------------------------

export interface GgmlWhisperSummary {
  readonly nVocab: number;
  readonly nAudioCtx: number;
  readonly nAudioState: number;
  readonly nAudioHead: number;
  readonly nAudioLayer: number;
  readonly nTextCtx: number;
  readonly nTextState: number;
  readonly nTextHead: number;
  readonly nTextLayer: number;
  readonly nMels: number;
  readonly ftype: 0 | 1;
  readonly fileTokens: number;
  readonly tensors: number;
  readonly bytes: number;
}

export interface ConvertOptions {
  /** 'f16' (default: whisper.cpp's ggml-*.bin layout) or 'f32' (every tensor f32). */
  readonly precision?: 'f16' | 'f32';
}

/** Whether whisper.cpp keeps the tensor in f32 in an f16 file. */
function keptF32(name: string, dims: number): boolean {
  return (
    dims < 2 ||
    name === 'encoder.conv1.bias' ||
    name === 'encoder.conv2.bias' ||
    name === 'encoder.positional_embedding' ||
    name === 'decoder.positional_embedding'
  );
}

/** Sequential output: a file descriptor, or memory for tests. */
interface Sink {
  write(b: Buffer): void;
}

/** Writes the ggml file for `model` and `vocabulary` to `sink`; returns what it wrote. */
export function writeGgmlWhisper(
  model: Ct2Model,
  vocabulary: readonly string[],
  sink: Sink,
  options: ConvertOptions = {},
): GgmlWhisperSummary {
  if (model.spec !== 'WhisperSpec') {
    throw new Ct2WhisperError(`not a CTranslate2 Whisper model (its spec is ${model.spec || 'unnamed'})`);
  }
  const r = new Ct2Reader(model);
  const f16 = (options.precision ?? 'f16') === 'f16';
  const layers = (side: string): number => {
    let n = 0;
    while (r.has(`${side}/layer_${String(n)}/ffn/linear_0/weight`)) n++;
    return n;
  };
  const conv1 = r.variable('encoder/conv1/weight');
  const emb = r.variable('decoder/embeddings/weight');
  const decPos = r.variable('decoder/position_encodings/encodings');
  if (!conv1 || !emb || !decPos) {
    throw new Ct2WhisperError(
      'the CTranslate2 Whisper model lacks encoder/conv1, decoder/embeddings or positions',
    );
  }
  const nAudioState = conv1.shape[0] ?? 0;
  const nMels = conv1.shape[1] ?? 0;
  const encPos = r.variable('encoder/position_encodings/encodings');
  const nAudioCtx = encPos?.shape[0] ?? 1500;
  const nVocab = emb.shape[0] ?? 0;
  const nTextState = emb.shape[1] ?? 0;
  const nTextCtx = decPos.shape[0] ?? 0;
  const nAudioLayer = layers('encoder');
  const nTextLayer = layers('decoder');
  const nAudioHead = r.scalar('encoder/num_heads');
  const nTextHead = r.scalar('decoder/num_heads');
  const eot = vocabulary.indexOf('<|endoftext|>');
  if (eot <= 0) throw new Ct2WhisperError('the vocabulary has no <|endoftext|> token');
  if (vocabulary.length !== nVocab) {
    throw new Ct2WhisperError(
      `the vocabulary has ${String(vocabulary.length)} tokens where the model's embeddings have ${String(nVocab)}`,
    );
  }
  const ftype = f16 ? 1 : 0;
  let bytes = 0;
  const put = (b: Buffer): void => {
    sink.write(b);
    bytes += b.length;
  };
  const i32 = (...values: number[]): void => {
    const b = Buffer.alloc(4 * values.length);
    values.forEach((v, i) => b.writeInt32LE(v, 4 * i));
    put(b);
  };
  const f32s = (values: Float32Array): void => {
    const b = Buffer.alloc(4 * values.length);
    for (let i = 0; i < values.length; i++) b.writeFloatLE(values[i] ?? 0, 4 * i);
    put(b);
  };
  put(Buffer.from([0x6c, 0x6d, 0x67, 0x67])); // 0x67676d6c little-endian
  i32(
    nVocab,
    nAudioCtx,
    nAudioState,
    nAudioHead,
    nAudioLayer,
    nTextCtx,
    nTextState,
    nTextHead,
    nTextLayer,
    nMels,
    ftype,
  );
  i32(nMels, 201);
  f32s(whisperMelFilters(nMels));
  i32(eot);
  const table = unicodeToByte();
  for (let i = 0; i < eot; i++) {
    const b = gpt2TokenBytes(vocabulary[i] ?? '', table);
    i32(b.length);
    put(b);
  }
  let tensors = 0;
  const write = (name: string, t: Tensor, shape: readonly number[] = t.shape): void => {
    const half = f16 && !keptF32(name, shape.length);
    const nameBytes = Buffer.from(name, 'utf8');
    i32(shape.length, nameBytes.length, half ? 1 : 0, ...[...shape].reverse());
    put(nameBytes);
    if (half) {
      const b = Buffer.alloc(2 * t.values.length);
      for (let i = 0; i < t.values.length; i++) b.writeUInt16LE(toHalf(t.values[i] ?? 0), 2 * i);
      put(b);
    } else {
      f32s(t.values);
    }
    tensors++;
  };
  const linear = (to: string, from: string, part = 0, parts = 1, bias = true): void => {
    write(`${to}.weight`, rows(r.tensor(`${from}/weight`), part, parts));
    if (bias) write(`${to}.bias`, rows(r.tensor(`${from}/bias`), part, parts));
  };
  const norm = (to: string, from: string): void => {
    write(`${to}.weight`, r.tensor(`${from}/gamma`));
    write(`${to}.bias`, r.tensor(`${from}/beta`));
  };
  const block = (to: string, from: string, cross: boolean): void => {
    norm(`${to}.attn_ln`, `${from}/self_attention/layer_norm`);
    linear(`${to}.attn.query`, `${from}/self_attention/linear_0`, 0, 3);
    linear(`${to}.attn.key`, `${from}/self_attention/linear_0`, 1, 3, false);
    linear(`${to}.attn.value`, `${from}/self_attention/linear_0`, 2, 3);
    linear(`${to}.attn.out`, `${from}/self_attention/linear_1`);
    if (cross) {
      norm(`${to}.cross_attn_ln`, `${from}/attention/layer_norm`);
      linear(`${to}.cross_attn.query`, `${from}/attention/linear_0`);
      linear(`${to}.cross_attn.key`, `${from}/attention/linear_1`, 0, 2, false);
      linear(`${to}.cross_attn.value`, `${from}/attention/linear_1`, 1, 2);
      linear(`${to}.cross_attn.out`, `${from}/attention/linear_2`);
    }
    norm(`${to}.mlp_ln`, `${from}/ffn/layer_norm`);
    linear(`${to}.mlp.0`, `${from}/ffn/linear_0`);
    linear(`${to}.mlp.2`, `${from}/ffn/linear_1`);
  };
  write(
    'encoder.positional_embedding',
    encPos
      ? r.tensor('encoder/position_encodings/encodings')
      : { shape: [nAudioCtx, nAudioState], values: whisperSinusoids(nAudioCtx, nAudioState) },
  );
  for (const c of ['conv1', 'conv2']) {
    write(`encoder.${c}.weight`, r.tensor(`encoder/${c}/weight`));
    const bias = r.tensor(`encoder/${c}/bias`);
    write(`encoder.${c}.bias`, bias, [bias.shape[0] ?? 0, 1]);
  }
  for (let i = 0; i < nAudioLayer; i++)
    block(`encoder.blocks.${String(i)}`, `encoder/layer_${String(i)}`, false);
  norm('encoder.ln_post', 'encoder/layer_norm');
  write('decoder.positional_embedding', r.tensor('decoder/position_encodings/encodings'));
  write('decoder.token_embedding.weight', r.tensor('decoder/embeddings/weight'));
  for (let i = 0; i < nTextLayer; i++)
    block(`decoder.blocks.${String(i)}`, `decoder/layer_${String(i)}`, true);
  norm('decoder.ln', 'decoder/layer_norm');
  return {
    nVocab,
    nAudioCtx,
    nAudioState,
    nAudioHead,
    nAudioLayer,
    nTextCtx,
    nTextState,
    nTextHead,
    nTextLayer,
    nMels,
    ftype,
    fileTokens: eot,
    tensors,
    bytes,
  };
}

/**
 * Converts the CTranslate2 Whisper model in `dir` to the ggml file `out` (written to `out.part`,
 * then renamed). The whole `model.bin` is read into memory (tiny 75 MB, base 145 MB as float16); one tensor at a time is converted.
 */
export function convertCt2WhisperToGgml(
  dir: string,
  out: string,
  options: ConvertOptions = {},
): GgmlWhisperSummary {
  const model = parseCt2Model(readModelBin(dir));
  const vocabulary = readCt2Vocabulary(dir);
  const part = `${out}.part`;
  const fd = openSync(part, 'w');
  let summary: GgmlWhisperSummary;
  try {
    summary = writeGgmlWhisper(
      model,
      vocabulary,
      {
        write: (b) => {
          writeAll(fd, b);
        },
      },
      options,
    );
  } catch (err) {
    closeSync(fd);
    rmSync(part, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(part, out);
  return summary;
}

/** `model.bin`, or its pieces `model.bin.part1`, `model.bin.part2` ... joined (split packaging). */
function readModelBin(dir: string): Buffer {
  const bin = join(dir, 'model.bin');
  if (existsSync(bin)) return readFileSync(bin);
  const parts: Buffer[] = [];
  for (let i = 1; existsSync(`${bin}.part${String(i)}`); i++)
    parts.push(readFileSync(`${bin}.part${String(i)}`));
  if (parts.length === 0) {
    throw new Ct2WhisperError(
      `${dir} holds no model.bin (nor model.bin.part1 ...): not a CTranslate2 model directory`,
    );
  }
  return Buffer.concat(parts);
}

function writeAll(fd: number, b: Buffer): void {
  for (let done = 0; done < b.length;) done += writeSync(fd, b, done, b.length - done);
}
