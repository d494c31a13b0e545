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
 * The CTranslate2 file is read by ct2-model.ts.
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
import { encodeWhisperHeader, type WhisperHparams } from './whisper-ggml-header.js';

import {
  Ct2Reader,
  Ct2WhisperError,
  parseCt2Model,
  readModelBin,
  rows,
  toHalf,
  type Ct2Model,
  type Tensor,
} from './ct2-model.js';

export {
  Ct2DType,
  Ct2WhisperError,
  parseCt2Model,
  toHalf,
  type Ct2Model,
  type Ct2Variable,
} from './ct2-model.js';

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

/** What the writer wrote: the header's hyperparameters, the vocabulary's file tokens, the tensors. */
export interface GgmlWhisperSummary extends WhisperHparams {
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
  const hparams: WhisperHparams = {
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
    ftype: f16 ? 1 : 0,
  };
  put(encodeWhisperHeader(hparams));
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
  return { ...hparams, fileTokens: eot, tensors, bytes };
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

function writeAll(fd: number, b: Buffer): void {
  for (let done = 0; done < b.length;) done += writeSync(fd, b, done, b.length - done);
}
