import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { wavHeaderBomb } from '../fixtures/bombs.js';
import { espeak } from './fixtures.js';
import { startStt, transcribe, type SttTestServer } from './helpers.js';

// What a recording costs is bounded whatever it says about itself: the header's duration is not
// trusted (ffmpeg decodes at most STT_MAX_AUDIO_SECONDS + 1 s of it), and every engine process
// (ffprobe, ffmpeg, pocketsphinx) runs under the service's memory and CPU limits.

let dir: string;
let longSpeech: string;
let shortSpeech: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'stt-limits-'));
  const sentence =
    'The patient reports chest pain radiating to the left arm since this morning, with nausea.';
  // About 70 s of speech: pocketsphinx needs far more than 3 s of CPU for it.
  longSpeech = espeak(Array(12).fill(sentence).join(' '), dir, 'long.wav');
  shortSpeech = espeak('The patient has a cough and a fever.', dir, 'short.wav');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const detail = (body: unknown): string => JSON.stringify((body as { detail?: unknown }).detail);

describe('stt decoding whatever the header says', () => {
  let srv: SttTestServer;
  beforeAll(async () => {
    srv = await startStt({ STT_MAX_AUDIO_SECONDS: '30' });
  }, 120_000);
  afterAll(() => srv.close());

  it('a WAV header claiming 10 hours over 1 s of samples is read for what it holds', async () => {
    const bomb = wavHeaderBomb(10 * 3600, 16_000, 16_000);
    expect(bomb.length).toBe(44 + 32_000);
    const t0 = performance.now();
    const { status, body } = await transcribe(srv.url, { name: 'bomb.wav', bytes: bomb }, { language: 'en' });
    expect(status).toBe(200);
    expect(body.duration_seconds).toBe(1);
    expect(performance.now() - t0).toBeLessThan(15_000);
  }, 30_000);
});

describe('stt engine processes under their CPU limit', () => {
  let srv: SttTestServer;
  beforeAll(async () => {
    srv = await startStt({ CHILD_CPU_SECONDS: '3', POCKETSPHINX_WARM: '1' });
  }, 120_000);
  afterAll(() => srv.close());

  it('422 when pocketsphinx uses its CPU time on a recording, long before its deadline; a short one is read', async () => {
    const t0 = performance.now();
    const { status, body } = await transcribe(srv.url, longSpeech, { language: 'en' });
    expect(status).toBe(422);
    expect(detail(body)).toContain(
      'Speech recognition took more than 3 s of CPU time (CHILD_CPU_SECONDS) and was stopped',
    );
    expect(performance.now() - t0).toBeLessThan(30_000);
    const short = await transcribe(srv.url, shortSpeech, { language: 'en' });
    expect(short.status).toBe(200);
    expect(short.body.backend).toBe('pocketsphinx');
  }, 60_000);
});
