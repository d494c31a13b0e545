/**
 * A tiny whisper.cpp model, written here: no ggml Whisper weights can be fetched on this machine
 * (the registries it reaches hold none), so the tests run the real whisper.cpp path on a model with
 * Whisper's real layout and tiny dimensions. The file follows whisper.cpp's loader
 * (`whisper_model_load` in whisper.cpp/src/whisper.cpp, bundled in @fugood/whisper.node):
 *
 * - magic 0x67676d6c ("ggml"), then 11 int32 hyperparameters: n_vocab, n_audio_ctx,
 *   n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head,
 *   n_text_layer, n_mels, ftype (0: f32);
 * - the mel filterbank: n_mel, n_fft (201), then n_mel * n_fft float32;
 * - the vocabulary: a count, then per token a uint32 length and its bytes (whisper.cpp adds the
 *   special tokens past the count itself);
 * - every tensor: n_dims, name length, type, the dimensions (ggml order, fastest first), the name,
 *   the data. Names and shapes are the ones the loader checks.
 *
 * Weights are seeded random numbers, so the "text" it writes means nothing: tests assert what is
 * real (it loads, runs, is timed, stops), never what it says. `n_vocab` decides the languages, as
 * in whisper.cpp: 51864 is English-only (*.en), 51865 multilingual (51866: large-v3, 128 mels).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sttFixturesDir } from './fixtures.js';

export type TinyWhisperKind = 'multilingual' | 'english' | 'v3';

const N_VOCAB: Record<TinyWhisperKind, number> = { multilingual: 51865, english: 51864, v3: 51866 };
const N_MELS: Record<TinyWhisperKind, number> = { multilingual: 80, english: 80, v3: 128 };
/** Tokens stored in the file: whisper.cpp's token_eot (gpt2: 50256; multilingual: 50257). */
const FILE_TOKENS: Record<TinyWhisperKind, number> = { multilingual: 50257, english: 50256, v3: 50257 };

export interface TinyWhisperOptions {
  readonly kind: TinyWhisperKind;
  readonly seed?: number;
  readonly state?: number;
  readonly heads?: number;
  readonly layers?: number;
}

/** A seeded generator (mulberry32), uniform in [-scale, scale). */
function random(seed: number, scale: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1) * scale;
  };
}

/** Triangular mel filters over the 201 bins of a 400-point FFT at 16 kHz (HTK mel scale). */
function melFilters(nMel: number, nFft = 201, sampleRate = 16_000): Float32Array {
  const mel = (f: number): number => 2595 * Math.log10(1 + f / 700);
  const hz = (m: number): number => 700 * (10 ** (m / 2595) - 1);
  const top = mel(sampleRate / 2);
  const points = Array.from({ length: nMel + 2 }, (_, i) => hz((top * i) / (nMel + 1)));
  const out = new Float32Array(nMel * nFft);
  for (let m = 0; m < nMel; m++) {
    const [lo, mid, hi] = [points[m] ?? 0, points[m + 1] ?? 0, points[m + 2] ?? 0];
    for (let k = 0; k < nFft; k++) {
      const f = (k * sampleRate) / 2 / (nFft - 1);
      const w = f < lo || f > hi ? 0 : f <= mid ? (f - lo) / (mid - lo) : (hi - f) / (hi - mid);
      out[m * nFft + k] = (w * 2) / (hi - lo);
    }
  }
  return out;
}

class Writer {
  private readonly chunks: Buffer[] = [];
  i32(...values: number[]): void {
    const b = Buffer.alloc(4 * values.length);
    values.forEach((v, i) => b.writeInt32LE(v, 4 * i));
    this.chunks.push(b);
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.chunks.push(b);
  }
  f32(values: Float32Array): void {
    this.chunks.push(Buffer.from(values.buffer, values.byteOffset, values.byteLength));
  }
  bytes(b: Buffer): void {
    this.chunks.push(b);
  }
  result(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** The model file's bytes. */
export function tinyWhisperModel(options: TinyWhisperOptions): Buffer {
  const kind = options.kind;
  const state = options.state ?? 64;
  const heads = options.heads ?? 2;
  const layers = options.layers ?? 4;
  const nVocab = N_VOCAB[kind];
  const nMels = N_MELS[kind];
  const audioCtx = 1500; // 30 s windows, as every Whisper model: timestamps come out in real seconds
  const textCtx = 448;
  const rnd = random(options.seed ?? 1234, 0.5);
  const w = new Writer();
  w.u32(0x67676d6c);
  w.i32(nVocab, audioCtx, state, heads, layers, textCtx, state, heads, layers, nMels, 0);
  w.i32(nMels, 201);
  w.f32(melFilters(nMels));
  const tokens = FILE_TOKENS[kind];
  w.i32(tokens);
  for (let i = 0; i < tokens; i++) {
    // The printable ASCII characters first (whisper.cpp looks up the token " " to suppress blanks),
    // then distinct Vietnamese-looking syllables: meaningless, valid UTF-8.
    const syllable = ['ba', 'cô', 'đau', 'thuốc', 'ngày', 'sốt'][i % 6] ?? 'x';
    const word = Buffer.from(i < 95 ? String.fromCharCode(32 + i) : ` ${syllable}${String(i)}`);
    w.u32(word.length);
    w.bytes(word);
  }
  const tensor = (name: string, dims: number[], fill?: number): void => {
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = fill ?? rnd();
    const nameBytes = Buffer.from(name);
    w.i32(dims.length, nameBytes.length, 0, ...dims);
    w.bytes(nameBytes);
    w.f32(data);
  };
  const block = (prefix: string, cross: boolean): void => {
    const attn = (a: string): void => {
      tensor(`${prefix}.${a}_ln.weight`, [state], 1);
      tensor(`${prefix}.${a}_ln.bias`, [state], 0);
      tensor(`${prefix}.${a}.query.weight`, [state, state]);
      tensor(`${prefix}.${a}.query.bias`, [state]);
      tensor(`${prefix}.${a}.key.weight`, [state, state]);
      tensor(`${prefix}.${a}.value.weight`, [state, state]);
      tensor(`${prefix}.${a}.value.bias`, [state]);
      tensor(`${prefix}.${a}.out.weight`, [state, state]);
      tensor(`${prefix}.${a}.out.bias`, [state]);
    };
    attn('attn');
    if (cross) attn('cross_attn');
    tensor(`${prefix}.mlp_ln.weight`, [state], 1);
    tensor(`${prefix}.mlp_ln.bias`, [state], 0);
    tensor(`${prefix}.mlp.0.weight`, [state, 4 * state]);
    tensor(`${prefix}.mlp.0.bias`, [4 * state]);
    tensor(`${prefix}.mlp.2.weight`, [4 * state, state]);
    tensor(`${prefix}.mlp.2.bias`, [state]);
  };
  tensor('encoder.positional_embedding', [state, audioCtx]);
  tensor('encoder.conv1.weight', [3, nMels, state]);
  tensor('encoder.conv1.bias', [1, state]);
  tensor('encoder.conv2.weight', [3, state, state]);
  tensor('encoder.conv2.bias', [1, state]);
  for (let i = 0; i < layers; i++) block(`encoder.blocks.${String(i)}`, false);
  tensor('encoder.ln_post.weight', [state], 1);
  tensor('encoder.ln_post.bias', [state], 0);
  tensor('decoder.positional_embedding', [state, textCtx]);
  tensor('decoder.token_embedding.weight', [state, nVocab]);
  for (let i = 0; i < layers; i++) block(`decoder.blocks.${String(i)}`, true);
  tensor('decoder.ln.weight', [state], 1);
  tensor('decoder.ln.bias', [state], 0);
  return w.result();
}

/**
 * The tiny models under $CLINICALSUITE_HOME/fixtures/stt/tiny-whisper (written once; the same
 * seed writes the same bytes, checked by the name's hash prefix). The bench reads them from there.
 */
export function ensureTinyWhisperModels(): Record<TinyWhisperKind, string> {
  const dir = join(sttFixturesDir(), 'tiny-whisper');
  mkdirSync(dir, { recursive: true });
  const out = {} as Record<TinyWhisperKind, string>;
  for (const kind of ['multilingual', 'english', 'v3'] as const) {
    const bytes = tinyWhisperModel({ kind });
    const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 12);
    const path = join(dir, `ggml-tiny-random-${kind}-${hash}.bin`);
    if (!existsSync(path)) {
      writeFileSync(`${path}.part`, bytes);
      renameSync(`${path}.part`, path);
    }
    out[kind] = path;
  }
  return out;
}
