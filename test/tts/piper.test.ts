/** @jest-environment ./test/face/ort-environment.cjs */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ffprobe, postTts, readWav, run, startTts, type TtsTestServer } from './helpers.js';
import { writeTinyPiperVoice } from './tiny-piper-voice.js';

// The Piper path end to end on onnxruntime-node, with tiny generated voices of Piper's exact
// signature whose output length is T = floor(N * hop * length_scale) for N phoneme ids: the
// service's phonemes and ids are checked through the length of what it returns.

const HOP = 256;
const EN_RATE = 16_000;
const VI_RATE = 24_000;
const GAP_SECONDS = 0.2;

/** espeak-ng's IPA clause lines for one sentence, read by the test itself. */
async function ipa(sentence: string, voice: string): Promise<string[]> {
  const child = run('espeak-ng', ['-q', '-b', '1', '--ipa', '-v', voice, '--stdin']);
  child.child.stdin?.end(sentence);
  const { stdout } = await child;
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/**
 * Piper's rule: ids = ^ _ (p _)* $ over the code points (NFD) of the clauses joined by their
 * punctuation and the sentence's terminator; `omit` are symbols the voice lacks (skipped).
 */
function idCount(clauses: string[], punctuation: string[], terminator: string, omit: string[] = []): number {
  const text =
    clauses.map((c, i) => (i < punctuation.length ? `${c}${punctuation[i] ?? ''} ` : c)).join('') +
    terminator;
  const phonemes = Array.from(text.normalize('NFD')).filter((p) => !omit.includes(p));
  return 2 + 2 * phonemes.length + 1;
}

const samplesFor = (ids: number, lengthScale: number) => Math.floor(ids * HOP * lengthScale);

function zeroCrossings(samples: Int16Array): number {
  let n = 0;
  for (let i = 1; i < samples.length; i++) if ((samples[i - 1] ?? 0) < 0 !== (samples[i] ?? 0) < 0) n++;
  return n;
}

let srv: TtsTestServer;
let voicesDir: string;
beforeAll(async () => {
  voicesDir = mkdtempSync(join(tmpdir(), 'tts-voices-'));
  writeTinyPiperVoice(voicesDir, 'en_US-tiny-x_low', {
    hopSamples: HOP,
    sampleRate: EN_RATE,
    frequencyHz: 440,
    espeakVoice: 'en-us',
    languageCode: 'en_US',
  });
  writeTinyPiperVoice(voicesDir, 'vi_VN-tiny-x_low', {
    hopSamples: HOP,
    sampleRate: VI_RATE,
    frequencyHz: 300,
    espeakVoice: 'vi',
    languageCode: 'vi_VN',
  });
  srv = await startTts({ TTS_VOICES_DIR: voicesDir });
});
afterAll(() => srv.close());

describe('tts service with Piper voices', () => {
  it('loads the voices it finds and speaks with them by default', async () => {
    const status = (await (await fetch(`${srv.url}/status`)).json()) as Record<string, unknown>;
    expect(status).toMatchObject({
      status: 'ready',
      engines: {
        piper: {
          voices: [
            { language: 'en', voice: 'en_US-tiny-x_low', sample_rate: EN_RATE },
            { language: 'vi', voice: 'vi_VN-tiny-x_low', sample_rate: VI_RATE },
          ],
          problems: [],
        },
        default_engine: { vi: 'piper', en: 'piper' },
      },
    });
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/^tts_piper_voices\{language="vi",service="tts"\} 1$/m);
  });

  it('speaks English with the length its phoneme ids imply, at the voice sample rate', async () => {
    const expected = samplesFor(idCount(await ipa('Hello world', 'en-us'), [], '.'), 1);
    const res = await postTts(srv.url, { text: 'Hello world.', language: 'en' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-tts-engine')).toBe('piper');
    expect(res.headers.get('x-tts-voice')).toBe('en_US-tiny-x_low');
    const wav = readWav(res.bytes);
    expect(wav).toMatchObject({ audioFormat: 1, channels: 1, bitsPerSample: 16, sampleRate: EN_RATE });
    expect(wav.samples.length).toBe(expected);
    // The model's float sine, normalised to full scale as Piper does, 440 Hz.
    const peak = wav.samples.reduce((m, s) => Math.max(m, Math.abs(s)), 0);
    expect(peak).toBeGreaterThan(32_000);
    expect(zeroCrossings(wav.samples) / wav.seconds).toBeGreaterThan(2 * 440 * 0.97);
    expect(zeroCrossings(wav.samples) / wav.seconds).toBeLessThan(2 * 440 * 1.03);
  });

  it('halves the length at speed 2.0 (length_scale 0.5)', async () => {
    const ids = idCount(await ipa('Hello world', 'en-us'), [], '.');
    const res = await postTts(srv.url, { text: 'Hello world.', language: 'en', speed: 2 });
    expect(readWav(res.bytes).samples.length).toBe(samplesFor(ids, 0.5));
  });

  it('keeps clause punctuation, speaks sentence by sentence and joins them with silence', async () => {
    const first = idCount(await ipa('Hello, doctor', 'en-us'), [','], '.');
    const second = idCount(await ipa('How are you', 'en-us'), [], '?');
    const res = await postTts(srv.url, { text: 'Hello, doctor. How are you?', language: 'en' });
    const wav = readWav(res.bytes);
    const gap = Math.round(GAP_SECONDS * EN_RATE);
    expect(wav.samples.length).toBe(samplesFor(first, 1) + gap + samplesFor(second, 1));
    // The gap is silence.
    const silence = wav.samples.subarray(samplesFor(first, 1), samplesFor(first, 1) + gap);
    expect(silence.every((s) => s === 0)).toBe(true);
  });

  it('speaks Vietnamese with the Vietnamese voice, phonemized by espeak-ng vi', async () => {
    const expected = samplesFor(idCount(await ipa('Xin chào bác sĩ', 'vi'), [], '.'), 1);
    const res = await postTts(srv.url, {
      text: 'Xin chào bác sĩ.',
      language: 'vi',
      response_format: 'base64',
    });
    const body = res.json() as Record<string, unknown>;
    expect(body).toMatchObject({
      engine: 'piper',
      voice: 'vi_VN-tiny-x_low',
      sample_rate: VI_RATE,
      language: 'vi',
    });
    const wav = readWav(Buffer.from(body['audio_base64'] as string, 'base64'));
    expect(wav.samples.length).toBe(expected);
    expect(body['duration_seconds']).toBeCloseTo(expected / VI_RATE, 3);
  });

  it('uses espeak-ng when asked, and makes MP3 from Piper audio', async () => {
    const espeak = await postTts(srv.url, { text: 'Hello world.', language: 'en', engine: 'espeak' });
    expect(espeak.headers.get('x-tts-engine')).toBe('espeak-ng');
    expect(readWav(espeak.bytes).sampleRate).toBe(22_050);
    const mp3 = await postTts(srv.url, { text: 'Hello world.', language: 'en', format: 'mp3' });
    expect(mp3.headers.get('x-tts-engine')).toBe('piper');
    const path = join(mkdtempSync(join(tmpdir(), 'tts-mp3-')), 'piper.mp3');
    writeFileSync(path, mp3.bytes);
    expect(await ffprobe(path)).toMatchObject({ codec: 'mp3', sampleRate: EN_RATE, channels: 1 });
  });
});

describe('tts service with some voices missing or unusable', () => {
  it('falls back to espeak-ng for a language without a voice, and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tts-voices-'));
    writeTinyPiperVoice(dir, 'en_US-tiny-x_low', {
      hopSamples: HOP,
      sampleRate: EN_RATE,
      frequencyHz: 440,
      espeakVoice: 'en-us',
      languageCode: 'en_US',
    });
    // Not a voice: an .onnx whose config is missing is ignored; a broken config is reported.
    writeFileSync(join(dir, 'orphan.onnx'), 'not a model');
    writeFileSync(join(dir, 'vi_VN-broken.onnx'), 'not a model');
    writeFileSync(join(dir, 'vi_VN-broken.onnx.json'), '{"audio": {}}');
    const one = await startTts({ TTS_VOICES_DIR: dir });
    try {
      const status = (await (await fetch(`${one.url}/status`)).json()) as {
        engines: { piper: { voices: { language: string }[]; problems: string[] }; default_engine: unknown };
      };
      expect(status.engines.piper.voices.map((v) => v.language)).toEqual(['en']);
      expect(status.engines.piper.problems).toEqual([
        expect.stringMatching(/vi_VN-broken\.onnx\.json is not a Piper voice config/),
      ]);
      expect(status.engines.default_engine).toEqual({ vi: 'espeak-ng', en: 'piper' });
      const vi = await postTts(one.url, { text: 'Xin chào.', language: 'vi' });
      expect(vi.status).toBe(200);
      expect(vi.headers.get('x-tts-engine')).toBe('espeak-ng');
      expect(vi.headers.get('x-tts-voice')).toBe('vi');
      const piperVi = await postTts(one.url, { text: 'Xin chào.', language: 'vi', engine: 'piper' });
      expect(piperVi.status).toBe(422);
      expect(JSON.stringify(piperVi.json())).toContain(
        'no Piper voice is installed for \\"vi\\" (installed: en)',
      );
    } finally {
      await one.close();
    }
  });

  it('refuses a voice named for the wrong language, skips phonemes a voice lacks, feeds sid to multi-speaker voices', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tts-voices-'));
    const en = writeTinyPiperVoice(dir, 'en_US-nostress', {
      hopSamples: HOP,
      sampleRate: EN_RATE,
      frequencyHz: 440,
      espeakVoice: 'en-us',
      languageCode: 'en_US',
      omit: ['ˈ', 'ˌ'],
      multiSpeaker: true,
    });
    const other = mkdtempSync(join(tmpdir(), 'tts-voices-'));
    const server = await startTts({ TTS_VOICES_DIR: other, TTS_VOICE_VI: en.onnx, TTS_VOICE_EN: en.onnx });
    try {
      const status = (await (await fetch(`${server.url}/status`)).json()) as {
        engines: { piper: { voices: { language: string; voice: string }[]; problems: string[] } };
      };
      expect(status.engines.piper.problems).toEqual([`TTS_VOICE_VI: ${en.onnx} speaks en, not vi`]);
      expect(status.engines.piper.voices).toEqual([
        { language: 'en', voice: 'en_US-nostress', sample_rate: EN_RATE },
      ]);
      const clauses = await ipa('Hello world', 'en-us');
      expect(clauses.join('')).toMatch(/ˈ/);
      const res = await postTts(server.url, { text: 'Hello world.', language: 'en' });
      expect(res.status).toBe(200);
      expect(readWav(res.bytes).samples.length).toBe(samplesFor(idCount(clauses, [], '.', ['ˈ', 'ˌ']), 1));
    } finally {
      await server.close();
    }
  });
});
