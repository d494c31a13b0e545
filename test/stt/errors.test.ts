import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureLibrivox, ffmpeg, type LibrivoxId, type Recording } from './fixtures.js';
import { startStt, transcribe, type SttTestServer } from './helpers.js';

// Every bad input gets a clear error with the right status, before any recognition runs; and a
// language nothing here transcribes is refused, never answered in another language.

let rec: Record<LibrivoxId, Recording>;
let srv: SttTestServer;
let dir: string;

beforeAll(async () => {
  rec = await ensureLibrivox();
  dir = mkdtempSync(join(tmpdir(), 'stt-errors-'));
  // 0870 is 227 KB and 7.1 s; 0920 is 194 KB and 6.05 s; 0880 is 96 KB and 2.99 s.
  srv = await startStt({ STT_MAX_AUDIO_BYTES: '200kb', STT_MAX_AUDIO_SECONDS: '5', MAX_CONCURRENCY: '1' });
}, 120_000);
afterAll(async () => {
  await srv.close();
  rmSync(dir, { recursive: true, force: true });
});

type Detail = { loc: string[]; msg: string; type: string }[];

describe('stt errors', () => {
  it('answers 422 naming the model to supply for Vietnamese (the default language) without a Whisper model', async () => {
    for (const fields of [{}, { language: 'vi' }]) {
      const { status, body } = await transcribe(srv.url, rec['0880'].wav, fields);
      expect(status).toBe(422);
      const detail = body['detail'] as Detail;
      expect(detail[0]?.loc).toEqual(['body', 'language']);
      expect(detail[0]?.msg).toMatch(/no Vietnamese speech recognition model is loaded/);
      expect(detail[0]?.msg).toMatch(/whisper\.cpp model \(ggml-base\.bin/);
      expect(detail[0]?.msg).toMatch(/STT_WHISPER_MODEL/);
    }
    // Naming pocketsphinx for Vietnamese is refused too.
    const named = await transcribe(srv.url, rec['0880'].wav, { language: 'vi', backend: 'pocketsphinx' });
    expect(named.status).toBe(422);
    expect(JSON.stringify(named.body)).toMatch(/does not transcribe Vietnamese/);
    const whisper = await transcribe(srv.url, rec['0880'].wav, { language: 'en', backend: 'whisper' });
    expect(whisper.status).toBe(422);
    expect((whisper.body['detail'] as Detail)[0]?.loc).toEqual(['body', 'backend']);
  });

  it('lists the failing fields with 422', async () => {
    const { status, body } = await transcribe(srv.url, rec['0880'].wav, { language: 'fr', backend: 'kaldi' });
    expect(status).toBe(422);
    const locs = (body['detail'] as Detail).map((d) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.language', 'body.backend']));
    const missing = await transcribe(srv.url, undefined, { language: 'en' });
    expect(missing.status).toBe(422);
    expect((missing.body['detail'] as Detail)[0]?.loc).toEqual(['body', 'file']);
  });

  it('answers 413 for a file over STT_MAX_AUDIO_BYTES and for audio over STT_MAX_AUDIO_SECONDS', async () => {
    const big = await transcribe(srv.url, rec['0870'].wav, { language: 'en' });
    expect(big.status).toBe(413);
    expect(big.body['detail']).toMatch(/larger than the 200 KB limit/);
    // 6.05 s, 194 KB: under the size, over the duration; the MP3 of 0870 (7.1 s) lacks a WAV header.
    const long = await transcribe(srv.url, rec['0920'].wav, { language: 'en' });
    expect(long.status).toBe(413);
    expect(long.body['detail']).toMatch(/5 s/);
    const mp3 = join(dir, 'long.mp3');
    ffmpeg('-i', rec['0870'].wav, '-c:a', 'libmp3lame', '-b:a', '32k', mp3);
    const longMp3 = await transcribe(srv.url, mp3, { language: 'en' });
    expect(longMp3.status).toBe(413);
  });

  it('answers 415 for files that are not audio and 400 for an empty file', async () => {
    const text = await transcribe(
      srv.url,
      { name: 'notes.wav', bytes: Buffer.from('Patient notes, not audio at all.\n'.repeat(50)) },
      { language: 'en' },
    );
    expect(text.status).toBe(415);
    expect(text.body['detail']).toMatch(/not a readable audio file/);
    const png = join(dir, 'image.png');
    ffmpeg('-f', 'lavfi', '-i', 'color=c=red:s=32x32', '-frames:v', '1', png);
    const image = await transcribe(srv.url, png, { language: 'en' });
    expect(image.status).toBe(415);
    expect(image.body['detail']).toMatch(/no audio stream/);
    const truncated = readFileSync(rec['0880'].wav).subarray(0, 30);
    const broken = await transcribe(srv.url, { name: 'cut.wav', bytes: truncated }, { language: 'en' });
    expect([400, 415]).toContain(broken.status);
    const empty = await transcribe(
      srv.url,
      { name: 'empty.wav', bytes: new Uint8Array() },
      { language: 'en' },
    );
    expect(empty.status).toBe(400);
    expect(empty.body['detail']).toMatch(/empty/);
    const json = await fetch(`${srv.url}/transcribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"language":"en"}',
    });
    expect(json.status).toBe(415);
  });

  it('counts the refusals by reason', async () => {
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    for (const reason of ['too_long', 'not_audio', 'language_unavailable'])
      expect(metrics).toMatch(new RegExp(`stt_rejections_total\\{reason="${reason}"[^}]*\\} [1-9]`));
  });
});

describe('stt without its engines', () => {
  it('stays unhealthy with the reason when pocketsphinx is not installed, and says so for English', async () => {
    const broken = await startStt({ POCKETSPHINX_PATH: '/nonexistent/pocketsphinx_continuous' });
    try {
      const health = await fetch(`${broken.url}/health`);
      expect(health.status).toBe(503);
      const body = (await health.json()) as { reason: string; backends: { pocketsphinx: { state: string } } };
      expect(body.backends.pocketsphinx.state).toBe('failed');
      expect(body.reason).toMatch(/not installed: apt-get install pocketsphinx pocketsphinx-en-us/);
      const { status, body: err } = await transcribe(broken.url, rec['0880'].wav, { language: 'en' });
      expect(status).toBe(503);
      expect(err['detail']).toMatch(/not installed/);
      // A file that is not audio is refused as such while the engine is missing too.
      const notAudio = await transcribe(
        broken.url,
        { name: 'notes.wav', bytes: Buffer.from('plain text, not audio') },
        { language: 'en' },
      );
      expect(notAudio.status).toBe(415);
    } finally {
      await broken.close();
    }
  }, 30_000);

  it('says plainly that a configured Whisper model is not one (503 for vi, English still served)', async () => {
    const notAModel = join(dir, 'ggml-base.bin');
    writeFileSync(notAModel, 'version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 147951465\n');
    const withModel = await startStt({ STT_WHISPER_MODEL: notAModel, MAX_CONCURRENCY: '1' });
    try {
      const health = (await (await fetch(`${withModel.url}/health`)).json()) as {
        status: string;
        languages: string[];
        backends: { whisper: { state: string; reason: string } };
      };
      expect(health.status).toBe('healthy');
      expect(health.languages).toEqual(['en']);
      expect(health.backends.whisper.state).toBe('failed');
      expect(health.backends.whisper.reason).toMatch(
        /ggml-base\.bin is not a whisper\.cpp ggml model \(bad magic\)/,
      );
      const vi = await transcribe(withModel.url, rec['0880'].wav, { language: 'vi' });
      expect(vi.status).toBe(503);
      expect(vi.body['detail']).toMatch(/Vietnamese speech recognition \(whisper\) is not ready/);
    } finally {
      await withModel.close();
    }
  }, 30_000);

  it('names the missing model files', async () => {
    const broken = await startStt({ POCKETSPHINX_LM: '/nonexistent/en-us.lm.bin' });
    try {
      const body = (await (await fetch(`${broken.url}/health`)).json()) as { reason: string };
      expect(body.reason).toMatch(/language model is missing at \/nonexistent\/en-us\.lm\.bin/);
    } finally {
      await broken.close();
    }
  });
});
