/**
 * CTranslate2's `model.bin` read into typed variables, for ct2-whisper.ts's converter.
 *
 * CTranslate2's `model.bin` (binary versions 4 to 6, little-endian): uint32 version, the spec's
 * name (a string: uint16 length counting a closing NUL, the bytes, the NUL), uint32 revision,
 * uint32 variable count, then per variable: name (string), uint8 rank, rank × uint32 dims, uint8
 * dtype (0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16), uint32 byte size, the data;
 * then uint32 alias count and (alias, target) string pairs. Scalars (`encoder/num_heads` ...) are
 * rank-0 variables. int8 weights carry a `weight_scale` per row (value = int8 / scale).
 *
 * Half floats are converted both ways here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ByteReader } from './byte-reader.js';

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
  const r = new ByteReader(
    bytes,
    (what, at) =>
      new Ct2WhisperError(`the CTranslate2 model is truncated (reading ${what} at byte ${String(at)})`),
  );
  // A uint16 length, then that many bytes: the string and its terminating NUL.
  const str = (what: string): string => {
    const b = r.take(r.u16(what), what);
    return b.toString('utf8', 0, Math.max(0, b.length - 1));
  };
  const version = r.u32('the version');
  if (version < 4 || version > 6) {
    throw new Ct2WhisperError(
      `not a CTranslate2 model this converter reads (binary version ${String(version)}; 4 to 6 are read)`,
    );
  }
  const spec = str('the spec name');
  const revision = r.u32('the revision');
  const count = r.u32('the variable count');
  const variables = new Map<string, Ct2Variable>();
  for (let i = 0; i < count; i++) {
    const name = str('a variable name');
    const rank = r.u8(`${name}'s rank`);
    const shape: number[] = [];
    for (let d = 0; d < rank; d++) shape.push(r.u32(`${name}'s shape`));
    const code = r.u8(`${name}'s dtype`);
    const dtype = DTYPES[code];
    if (dtype === undefined) throw new Ct2WhisperError(`${name} has an unknown dtype ${String(code)}`);
    const size = r.u32(`${name}'s size`);
    const elements = shape.reduce((a, b) => a * b, 1);
    if (size !== elements * DTYPE_BYTES[dtype]) {
      throw new Ct2WhisperError(`${name}: ${String(size)} bytes for shape [${shape.join(', ')}]`);
    }
    variables.set(name, { name, shape, dtype, data: r.take(size, `${name}'s data`) });
  }
  const aliases = new Map<string, string>();
  if (r.at < bytes.length) {
    const n = r.u32('the alias count');
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
export interface Tensor {
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

export class Ct2Reader {
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
export function rows(t: Tensor, part: number, parts: number): Tensor {
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

/** `model.bin`, or its pieces `model.bin.part1`, `model.bin.part2` ... joined (split packaging). */
export function readModelBin(dir: string): Buffer {
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
