import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspectWhisperModel } from '../../services/stt/src/adapters/whisper-model.js';
import { espeak, ffmpeg } from './fixtures.js';
import { processesMatching, startStt, transcribe, type SttTestServer } from './helpers.js';
import { ensureTinyWhisperModels, type TinyWhisperKind } from './tiny-whisper-ggml.js';

// The real whisper.cpp path (@fugood/whisper.node's prebuilt CPU binary, in child processes) on
// tiny generated models with Whisper's real layout and random weights (see tiny-whisper-ggml.ts):
// what they "say" means nothing, so these tests assert what is real: the model loads, requests are
// routed to it and answered with timed segments inside the audio, an English-only model refuses
// Vietnamese, a broken file is named, and abort, deadline and concurrency hold.

/** What the child processes' command line holds (their program reads this variable). */
const CHILD_MARKER = 'STT_WHISPER_BINDING';

let models: Record<TinyWhisperKind, string>;
let dir: string;
let viWav: string;
let longWav: string;

type Health = {
  backends: Record<
    string,
    { state: string; languages: string[]; reason: string | null; model: string; engine: string }
  >;
  languages: string[];
};

async function health(url: string): Promise<Health> {
  return (await (await fetch(`${url}/health`)).json()) as Health;
}

beforeAll(() => {
  models = ensureTinyWhisperModels();
  dir = mkdtempSync(join(tmpdir(), 'stt-whisper-'));
  viWav = espeak('Bệnh nhân bị sốt ba ngày, đau đầu và ho.', dir, 'vi.wav', 'vi');
  // 75 s of tone and noise: several 30 s windows, long enough to stop mid-way.
  longWav = join(dir, 'long.wav');
  ffmpeg(
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=220:duration=75',
    '-f',
    'lavfi',
    '-i',
    'anoisesrc=d=75:a=0.05',
    '-filter_complex',
    'amix=inputs=2',
    '-ar',
    '16000',
    '-ac',
    '1',
    longWav,
  );
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the model file check', () => {
  it('reads the vocabulary size, the languages and every tensor of a whisper.cpp ggml file', async () => {
    const multi = await inspectWhisperModel(models.multilingual);
    expect(multi.hparams.nVocab).toBe(51865);
    expect(multi.languages).toEqual(['vi', 'en']);
    expect(multi.tensors).toBe(11 + 15 * 4 + 24 * 4);
    expect(multi.size).toBe('tiny');
    const en = await inspectWhisperModel(models.english);
    expect(en.languages).toEqual(['en']);
    expect(en.size).toBe('tiny.en');
    const v3 = await inspectWhisperModel(models.v3);
    expect([v3.hparams.nVocab, v3.hparams.nMels]).toEqual([51866, 128]);
  });

  it('names a truncated file, a wrong file and a missing one', async () => {
    const bytes = readFileSync(models.multilingual);
    const cut = join(dir, 'cut.bin');
    writeFileSync(cut, bytes.subarray(0, bytes.length - 1000));
    await expect(inspectWhisperModel(cut)).rejects.toThrow(
      /truncated: tensor decoder\.blocks\.3\.mlp\.2\.weight needs 125 bytes past the end/,
    );
    writeFileSync(cut, bytes.subarray(0, 20));
    await expect(inspectWhisperModel(cut)).rejects.toThrow(/truncated/);
    const onnx = join(dir, 'model.onnx');
    writeFileSync(onnx, Buffer.from('\x08\x07\x12\x07pytorch this is not ggml at all'));
    await expect(inspectWhisperModel(onnx)).rejects.toThrow(/not a whisper\.cpp ggml model \(bad magic\)/);
    await expect(inspectWhisperModel(join(dir, 'none.bin'))).rejects.toThrow(/cannot read .*ENOENT/);
  });
});

describe('stt with a multilingual whisper.cpp model', () => {
  let srv: SttTestServer;
  beforeAll(async () => {
    srv = await startStt({
      STT_WHISPER_MODEL: models.multilingual,
      MAX_CONCURRENCY: '2',
      STT_WHISPER_THREADS: '2',
    });
  }, 120_000);
  afterAll(async () => {
    await srv.close();
    expect(processesMatching(CHILD_MARKER)).toBe(0);
  });

  it('shows whisper ready with Vietnamese and English on /health, / and /status', async () => {
    const h = await health(srv.url);
    expect(h.backends['whisper']).toMatchObject({ state: 'ready', languages: ['vi', 'en'], reason: null });
    expect(h.backends['whisper']?.model).toMatch(
      /ggml-tiny-random-multilingual-.*\(whisper tiny, multilingual\)/,
    );
    expect(h.backends['whisper']?.engine).toMatch(
      /^whisper\.cpp \(@fugood\/whisper\.node 1\.1\.3, CPU \w+ build, 2 threads\)$/,
    );
    expect(h.languages).toEqual(['vi', 'en']);
    const root = (await (await fetch(`${srv.url}/`)).json()) as { languages: string[] };
    expect(root.languages).toEqual(['vi', 'en']);
    const status = (await (await fetch(`${srv.url}/status`)).json()) as Health;
    expect(status.backends['whisper']?.state).toBe('ready');
  });

  it('transcribes Vietnamese with whisper: segments timed inside the audio, the language whisper used', async () => {
    for (const fields of [{}, { language: 'vi' }, { language: 'vi', backend: 'whisper' }]) {
      const { status, body } = await transcribe(srv.url, viWav, fields);
      expect(status).toBe(200);
      expect(body).toMatchObject({ language: 'vi', backend: 'whisper', engine_language: 'vi' });
      const duration = body.duration_seconds ?? 0;
      expect(duration).toBeGreaterThan(1);
      expect(body.segments?.length).toBeGreaterThan(0);
      for (const s of body.segments ?? []) {
        expect(s.start).toBeGreaterThanOrEqual(0);
        expect(s.end).toBeGreaterThanOrEqual(s.start);
        expect(s.end).toBeLessThanOrEqual(duration);
        expect(s.text).not.toBe('');
        expect(s.confidence).toBeNull();
      }
      expect(body.text).toBe((body.segments ?? []).map((s) => s.text).join(' '));
    }
  }, 120_000);

  it('routes English to whisper when loaded, and to pocketsphinx when named', async () => {
    const wav = espeak('The patient has had a fever for three days.', dir, 'en.wav');
    const auto = await transcribe(srv.url, wav, { language: 'en' });
    expect(auto.status).toBe(200);
    expect(auto.body).toMatchObject({ backend: 'whisper', language: 'en', engine_language: 'en' });
    const named = await transcribe(srv.url, wav, { language: 'en', backend: 'pocketsphinx' });
    expect(named.status).toBe(200);
    expect(named.body).toMatchObject({ backend: 'pocketsphinx', engine_language: null });
    expect(named.body.text).not.toBe('');
  }, 120_000);

  it('stops the whisper.cpp process when the client goes away, and serves the next request', async () => {
    expect(processesMatching(CHILD_MARKER)).toBe(1);
    const controller = new AbortController();
    const request = transcribe(srv.url, longWav, { language: 'vi' }, { signal: controller.signal }).catch(
      (error: unknown) => error,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const killedBefore = processesMatching(CHILD_MARKER);
    controller.abort();
    await request;
    // The busy process is killed at once; a fresh one (a new pid) loads the model behind it.
    const deadline = Date.now() + 30_000;
    let ready = false;
    while (Date.now() < deadline && !ready) {
      await new Promise((r) => setTimeout(r, 200));
      ready =
        (await health(srv.url)).backends['whisper']?.state === 'ready' &&
        processesMatching(CHILD_MARKER) === 1;
    }
    expect(killedBefore).toBe(1);
    expect(ready).toBe(true);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/stt_backend_ready\{[^}]*backend="whisper"[^}]*\} 1/);
    const next = await transcribe(srv.url, viWav, { language: 'vi' });
    expect(next.status).toBe(200);
    expect(next.body.backend).toBe('whisper');
  }, 120_000);

  it('runs at most STT_WHISPER_PROCESSES (1) transcriptions at once; the others wait their turn', async () => {
    let most = 0;
    const watching = { on: true };
    const watch = (async () => {
      while (watching.on) {
        most = Math.max(most, processesMatching(CHILD_MARKER));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const results = await Promise.all([1, 2, 3].map(() => transcribe(srv.url, viWav, { language: 'vi' })));
    watching.on = false;
    await watch;
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(most).toBe(1);
  }, 120_000);

  it('never logs the transcript', () => {
    const logged = JSON.stringify(srv.logs);
    expect(logged).toMatch(/whisper model loaded/);
    expect(logged).not.toMatch(/ngày\d+|sốt\d+|thuốc\d+/);
  });
});

describe('stt whisper deadline', () => {
  it('answers 504 past STT_RECOGNIZE_TIMEOUT_MS, kills the process and loads a fresh one', async () => {
    const srv = await startStt({
      STT_WHISPER_MODEL: models.multilingual,
      STT_RECOGNIZE_TIMEOUT_MS: '500',
      STT_POCKETSPHINX: 'false',
    });
    try {
      const { status, body } = await transcribe(srv.url, longWav, { language: 'vi' });
      expect(status).toBe(504);
      expect(JSON.stringify(body)).toMatch(/STT_RECOGNIZE_TIMEOUT_MS/);
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && processesMatching(CHILD_MARKER) !== 1)
        await new Promise((r) => setTimeout(r, 200));
      expect(processesMatching(CHILD_MARKER)).toBe(1);
    } finally {
      await srv.close();
    }
    expect(processesMatching(CHILD_MARKER)).toBe(0);
  }, 120_000);
});

describe('stt with other whisper.cpp models', () => {
  it('serves Vietnamese with a large-v3 layout (128 mels, n_vocab 51866)', async () => {
    const srv = await startStt({ STT_WHISPER_MODEL: models.v3, STT_POCKETSPHINX: 'false' });
    try {
      const { status, body } = await transcribe(srv.url, viWav, { language: 'vi' });
      expect(status).toBe(200);
      expect(body).toMatchObject({ backend: 'whisper', engine_language: 'vi' });
    } finally {
      await srv.close();
    }
  }, 120_000);

  it('refuses Vietnamese with an English-only model (422 naming the model to supply), serves English', async () => {
    const srv = await startStt({ STT_WHISPER_MODEL: models.english });
    try {
      const h = await health(srv.url);
      expect(h.backends['whisper']).toMatchObject({ state: 'ready', languages: ['en'] });
      expect(h.backends['whisper']?.model).toMatch(/English-only/);
      expect(h.languages).toEqual(['en']);
      for (const fields of [{ language: 'vi' }, { language: 'vi', backend: 'whisper' }]) {
        const { status, body } = await transcribe(srv.url, viWav, fields);
        expect(status).toBe(422);
        const msg = JSON.stringify(body);
        expect(msg).toMatch(/multilingual whisper\.cpp model \(ggml-base\.bin/);
        expect(msg).toMatch(/not a \*\.en model/);
        expect(msg).toMatch(/STT_WHISPER_MODEL/);
      }
      const en = await transcribe(srv.url, viWav, { language: 'en' });
      expect(en.status).toBe(200);
      expect(en.body).toMatchObject({ backend: 'whisper', engine_language: 'en' });
    } finally {
      await srv.close();
    }
  }, 120_000);

  it('names a truncated model (503 for Vietnamese), and stays up on pocketsphinx for English', async () => {
    const bytes = readFileSync(models.multilingual);
    const cut = join(dir, 'ggml-base.bin');
    writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const srv = await startStt({ STT_WHISPER_MODEL: cut });
    try {
      const h = await health(srv.url);
      expect(h.backends['whisper']?.state).toBe('failed');
      expect(h.backends['whisper']?.reason).toMatch(
        /ggml-base\.bin is truncated: tensor .* download it again/,
      );
      const vi = await transcribe(srv.url, viWav, { language: 'vi' });
      expect(vi.status).toBe(503);
      expect(JSON.stringify(vi.body)).toMatch(
        /Vietnamese speech recognition \(whisper\) is not ready: .*truncated/,
      );
      const en = await transcribe(srv.url, viWav, { language: 'en' });
      expect(en.status).toBe(200);
      expect(en.body.backend).toBe('pocketsphinx');
      expect(processesMatching(CHILD_MARKER)).toBe(0);
    } finally {
      await srv.close();
    }
  }, 120_000);

  it('waits for a model file that is not there yet (503 naming the path), then loads it', async () => {
    const later = join(dir, 'later', 'ggml-small.bin');
    const srv = await startStt({ STT_WHISPER_MODEL: later, MODEL_POLL_MS: '100' }, false);
    try {
      await srv.service.backends.get('pocketsphinx')?.settled();
      const h = await health(srv.url);
      expect(h.backends['whisper']?.state).toBe('starting');
      expect(h.backends['whisper']?.reason).toMatch(
        /waiting for the Whisper model file at .*later\/ggml-small\.bin/,
      );
      const vi = await transcribe(srv.url, viWav, { language: 'vi' });
      expect(vi.status).toBe(503);
      rmSync(join(dir, 'later'), { recursive: true, force: true });
      copyFileSync(models.multilingual, join(dir, 'ggml-small.tmp'));
      await import('node:fs').then((fs) => {
        fs.mkdirSync(join(dir, 'later'));
        fs.renameSync(join(dir, 'ggml-small.tmp'), later);
      });
      await srv.service.settled();
      expect((await health(srv.url)).backends['whisper']?.state).toBe('ready');
      expect((await transcribe(srv.url, viWav, { language: 'vi' })).status).toBe(200);
    } finally {
      await srv.close();
    }
  }, 120_000);
});
