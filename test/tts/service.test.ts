import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ffprobe, postTts, readWav, rms, run, startTts, type TtsTestServer } from './helpers.js';

// The service with the real espeak-ng and ffmpeg (Debian packages), over a real socket.

/** Measured with espeak-ng 1.51 at 175 wpm: 6.81 s (speed 2.0: 3.30 s, 0.5: 14.08 s). */
const EN =
  'The patient reports a mild headache and a sore throat for three days. Blood pressure is one hundred twenty over eighty.';
/** Measured with espeak-ng 1.51: 5.50 s (speed 2.0: 2.50 s, 0.5: 11.57 s). */
const VI = 'Bệnh nhân bị sốt cao ba ngày, kèm theo ho và đau họng. Huyết áp một trăm hai mươi trên tám mươi.';

interface Base64Body {
  audio_base64: string;
  format: string;
  mime_type: string;
  sample_rate: number;
  duration_seconds: number;
  size_bytes: number;
  engine: string;
  voice: string;
  language: string;
  speed: number;
  characters: number;
}
interface Detail {
  detail: { loc: (string | number)[]; msg: string; type: string }[] | string;
}

let srv: TtsTestServer;
beforeAll(async () => {
  srv = await startTts();
});
afterAll(() => srv.close());

describe('tts service with espeak-ng', () => {
  it('is healthy once espeak-ng answered, and describes itself, its engines and its API', async () => {
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'healthy', service: 'tts', version: '1.0.0' });
    const root = (await (await fetch(`${srv.url}/`)).json()) as Record<string, unknown>;
    expect(root).toMatchObject({
      service: 'tts',
      status: 'ready',
      docs: '/docs',
      languages: ['vi', 'en'],
      formats: ['wav', 'mp3'],
      max_characters: 5000,
    });
    expect(root['port']).toBe(0); // the configured port (0: ephemeral, as the test asked)
    const status = (await (await fetch(`${srv.url}/status`)).json()) as Record<string, unknown>;
    expect(status).toMatchObject({
      status: 'ready',
      engines: {
        espeak_ng: { available: true, version: expect.stringMatching(/^\d+\.\d+/) },
        piper: { voices: [], problems: [] },
        mp3: { available: true, reason: null },
        default_engine: { vi: 'espeak-ng', en: 'espeak-ng' },
      },
      concurrency: { limit: 2, running: 0 },
      gpu: { available: false, device: 'cpu' },
    });
    const gpu = (await (await fetch(`${srv.url}/gpu_status`)).json()) as Record<string, unknown>;
    expect(gpu).toMatchObject({ available: false, device: 'cpu' });
    const openapi = (await (await fetch(`${srv.url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>
      >;
    };
    const ok = openapi.paths['/tts']?.['post']?.responses['200'];
    expect(Object.keys(ok?.content ?? {}).sort()).toEqual(['application/json', 'audio/mpeg', 'audio/wav']);
    expect((await fetch(`${srv.url}/docs`)).status).toBe(200);
  });

  it.each([
    ['en', EN, 5.0, 9.0],
    ['vi', VI, 4.0, 7.5],
  ])('speaks %s as a valid 16-bit mono WAV of plausible length', async (language, text, min, max) => {
    const res = await postTts(srv.url, { text, language });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(res.headers.get('x-tts-engine')).toBe('espeak-ng');
    expect(res.headers.get('x-tts-voice')).toBe(language === 'vi' ? 'vi' : 'en-us');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const wav = readWav(res.bytes);
    expect(wav).toMatchObject({ audioFormat: 1, channels: 1, bitsPerSample: 16, sampleRate: 22050 });
    expect(wav.byteRate).toBe(22050 * 2);
    expect(wav.blockAlign).toBe(2);
    expect(wav.seconds).toBeGreaterThan(min);
    expect(wav.seconds).toBeLessThan(max);
    expect(Number(res.headers.get('x-audio-duration-seconds'))).toBeCloseTo(wav.seconds, 2);
    expect(rms(wav.samples)).toBeGreaterThan(500); // speech, not silence
  });

  it.each([
    ['en', EN],
    ['vi', VI],
  ])('speaks %s about half as long at speed 2.0 and about twice as long at 0.5', async (language, text) => {
    const seconds = async (speed: number) =>
      readWav((await postTts(srv.url, { text, language, speed })).bytes).seconds;
    const normal = await seconds(1);
    const fast = await seconds(2);
    const slow = await seconds(0.5);
    // Measured ratios: 0.45-0.49 (2.0) and 2.07-2.10 (0.5).
    expect(fast / normal).toBeGreaterThan(0.38);
    expect(fast / normal).toBeLessThan(0.62);
    expect(slow / normal).toBeGreaterThan(1.7);
    expect(slow / normal).toBeLessThan(2.5);
  });

  it('makes MP3 that ffprobe decodes, as long as the WAV', async () => {
    const wav = readWav((await postTts(srv.url, { text: VI, language: 'vi' })).bytes);
    const res = await postTts(srv.url, { text: VI, language: 'vi', format: 'mp3' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    const path = join(mkdtempSync(join(tmpdir(), 'tts-mp3-')), 'speech.mp3');
    writeFileSync(path, res.bytes);
    const probe = await ffprobe(path);
    expect(probe).toMatchObject({ codec: 'mp3', sampleRate: 22050, channels: 1 });
    // The encoder adds a frame or two of padding.
    expect(Math.abs(probe.seconds - wav.seconds)).toBeLessThan(0.15);
    expect(res.bytes.length).toBeLessThan(wav.dataBytes / 3);
  });

  it('answers base64 JSON that decodes to the same audio as the raw answer', async () => {
    const raw = await postTts(srv.url, { text: EN, language: 'en' });
    const asked = await postTts(srv.url, { text: EN, language: 'en', response_format: 'base64' });
    expect(asked.status).toBe(200);
    expect(asked.headers.get('content-type')).toMatch(/^application\/json/);
    const body = asked.json() as Base64Body;
    const audio = Buffer.from(body.audio_base64, 'base64');
    expect(audio.equals(raw.bytes)).toBe(true);
    expect(body).toMatchObject({
      format: 'wav',
      mime_type: 'audio/wav',
      sample_rate: 22050,
      engine: 'espeak-ng',
      voice: 'en-us',
      language: 'en',
      speed: 1,
      characters: EN.length,
      size_bytes: audio.length,
    });
    expect(body.duration_seconds).toBeCloseTo(readWav(audio).seconds, 2);
    // Accept: application/json alone asks for the same; an explicit response_format wins over it.
    const accepted = await postTts(
      srv.url,
      { text: 'Hello.', language: 'en', format: 'mp3' },
      { accept: 'application/json' },
    );
    expect(accepted.json() as Base64Body).toMatchObject({ format: 'mp3', mime_type: 'audio/mpeg' });
    expect(
      Buffer.from((accepted.json() as Base64Body).audio_base64, 'base64')
        .subarray(0, 3)
        .toString('latin1'),
    ).toBe('ID3');
    const audioWanted = await postTts(
      srv.url,
      { text: 'Hello.', language: 'en', response_format: 'audio' },
      { accept: 'application/json' },
    );
    expect(audioWanted.headers.get('content-type')).toBe('audio/wav');
  });

  it('refuses bad input with the right status, naming the field', async () => {
    const fields = async (body: unknown, status = 422) => {
      const res = await postTts(srv.url, body);
      expect(res.status).toBe(status);
      const detail = (res.json() as Detail).detail;
      return Array.isArray(detail) ? detail.map((d) => `${d.loc.join('.')}: ${d.msg}`) : [detail];
    };
    expect(await fields({ text: '', language: 'vi' })).toEqual([
      'body.text: text is empty: it has no letter or digit to speak',
    ]);
    expect(await fields({ text: ' \n\t ?!... ', language: 'en' })).toEqual([
      'body.text: text is empty: it has no letter or digit to speak',
    ]);
    expect(await fields({ text: 'a'.repeat(5001), language: 'en' })).toEqual([
      'body.text: text is too long: 5001 characters, the limit is 5000',
    ]);
    expect((await fields({ text: 'Xin chào', language: 'fr' }))[0]).toMatch(/^body\.language: .*"vi"\|"en"/);
    expect((await fields({ text: 'Xin chào' }))[0]).toMatch(/^body\.language: /);
    expect((await fields({ text: 'Hi', language: 'en', speed: 0.4 }))[0]).toMatch(/^body\.speed: .*>=0\.5/);
    expect((await fields({ text: 'Hi', language: 'en', speed: 2.5 }))[0]).toMatch(/^body\.speed: .*<=2/);
    expect((await fields({ text: 'Hi', language: 'en', speed: '1' }))[0]).toMatch(/^body\.speed: /);
    expect((await fields({ text: 'Hi', language: 'en', format: 'ogg' }))[0]).toMatch(/^body\.format: /);
    expect((await fields({ text: 42, language: 'en' }))[0]).toMatch(/^body\.text: /);
    expect(await fields({ text: 'Hi', language: 'en', engine: 'piper' })).toEqual([
      'body.engine: no Piper voice is installed for "en" (installed: none); mount one in the model volume or ask for engine "auto" or "espeak"',
    ]);
    const plain = await fetch(`${srv.url}/tts`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'Hi',
    });
    expect(plain.status).toBe(415);
    expect(await plain.json()).toEqual({ detail: 'Send the request as application/json' });
    const malformed = await postTts(srv.url, '{"text": "Hi", "language": ');
    expect(malformed.status).toBe(400);
    const huge = await postTts(srv.url, { text: 'x'.repeat(70_000), language: 'en' });
    expect(huge.status).toBe(413);
  });

  it('never logs the text, and meters what it spoke', async () => {
    const secret = 'Nguyễn Văn Bí Mật có kết quả xét nghiệm dương tính';
    expect((await postTts(srv.url, { text: secret, language: 'vi' })).status).toBe(200);
    expect((await postTts(srv.url, { text: `${secret}!`, language: 'fr' })).status).toBe(422);
    const logged = JSON.stringify(srv.logs);
    expect(logged).not.toContain('Bí Mật');
    expect(logged).not.toContain('Bi\\u0301');
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(
      /^tts_syntheses_total\{engine="espeak-ng",language="vi",format="wav",service="tts"\} [1-9]/m,
    );
    expect(metrics).toMatch(/^tts_audio_seconds_total\{engine="espeak-ng",service="tts"\} [1-9]/m);
    expect(metrics).toMatch(/^tts_characters_total\{language="vi",service="tts"\} [1-9]/m);
    expect(metrics).toMatch(
      /^tts_synthesis_duration_seconds_count\{service="tts",engine="espeak-ng"\} [1-9]/m,
    );
    expect(metrics).toMatch(/^tts_piper_voices\{language="vi",service="tts"\} 0$/m);
    expect(metrics).toMatch(
      /^http_requests_total\{method="POST",route="\/tts",status="422",service="tts"\} [1-9]/m,
    );
  });

  it('stops espeak-ng at the deadline: 504 at once, the process killed, the slot given back', async () => {
    const short = await startTts({ REQUEST_TIMEOUT_MS: '40' });
    try {
      const text = `${VI} `.repeat(45).slice(0, 4900);
      const started = performance.now();
      const res = await postTts(short.url, { text, language: 'vi', speed: 0.5 });
      expect(res.status).toBe(504);
      expect(performance.now() - started).toBeLessThan(1000);
      // The synthesis of this text alone takes longer than the deadline: the process was killed.
      await new Promise((r) => setTimeout(r, 100));
      const { stdout } = await run('ps', ['-o', 'comm=', '--ppid', String(process.pid)]).catch(() => ({
        stdout: '',
      }));
      expect(stdout).not.toContain('espeak-ng');
      const status = (await (await fetch(`${short.url}/status`)).json()) as {
        concurrency: { running: number };
      };
      expect(status.concurrency.running).toBe(0);
    } finally {
      await short.close();
    }
  });
  it('kills espeak-ng when the client goes away, and gives the slot back', async () => {
    const text = `${VI} `.repeat(45).slice(0, 4900);
    const controller = new AbortController();
    const request = fetch(`${srv.url}/tts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text, language: 'vi', speed: 0.5 }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    // Wait until espeak-ng runs (it takes ~0.4 s on this text), then hang up.
    let during = '';
    for (let i = 0; i < 150 && !during.includes('espeak-ng'); i++) {
      await new Promise((r) => setTimeout(r, 20));
      during = (await run('ps', ['-o', 'comm=', '--ppid', String(process.pid)])).stdout;
    }
    expect(during).toContain('espeak-ng');
    controller.abort();
    expect(await request).toMatchObject({ name: 'AbortError' });
    await new Promise((r) => setTimeout(r, 100));
    const { stdout: after } = await run('ps', ['-o', 'comm=', '--ppid', String(process.pid)]).catch(() => ({
      stdout: '',
    }));
    expect(after).not.toContain('espeak-ng');
    const status = (await (await fetch(`${srv.url}/status`)).json()) as { concurrency: { running: number } };
    expect(status.concurrency.running).toBe(0);
  });
});

describe('tts service without its engines', () => {
  it('is not ready, with the reason, while espeak-ng is missing', async () => {
    const broken = await startTts({ ESPEAK_PATH: '/nonexistent/espeak-ng' });
    try {
      // espeak-ng is looked for again every 50 ms: wait for a look that has ended, not a fixed time.
      let health = await fetch(`${broken.url}/health`);
      let body = (await health.json()) as { reason?: string };
      for (
        const started = Date.now();
        body.reason === 'checking espeak-ng' && Date.now() - started < 10_000;
      ) {
        await new Promise((r) => setTimeout(r, 20));
        health = await fetch(`${broken.url}/health`);
        body = (await health.json()) as { reason?: string };
      }
      expect(health.status).toBe(503);
      expect(body).toMatchObject({
        status: 'unhealthy',
        reason: expect.stringContaining('espeak-ng not found (/nonexistent/espeak-ng)'),
      });
      const res = await postTts(broken.url, { text: 'Hello', language: 'en' });
      expect(res.status).toBe(503);
      expect((res.json() as Detail).detail).toMatch(/^Service not ready: espeak-ng not found/);
      expect(res.headers.get('retry-after')).not.toBeNull();
    } finally {
      await broken.close();
    }
  });

  it('answers 503 for MP3 without ffmpeg, and still speaks WAV', async () => {
    const noFfmpeg = await startTts({ FFMPEG_PATH: '/nonexistent/ffmpeg' });
    try {
      const mp3 = await postTts(noFfmpeg.url, { text: 'Hello', language: 'en', format: 'mp3' });
      expect(mp3.status).toBe(503);
      expect((mp3.json() as Detail).detail).toMatch(
        /^MP3 output is unavailable: \/nonexistent\/ffmpeg is not installed/,
      );
      expect((await postTts(noFfmpeg.url, { text: 'Hello', language: 'en' })).status).toBe(200);
    } finally {
      await noFfmpeg.close();
    }
  });

  it('asks for a bearer token when AUTH_TOKENS_FILE is set', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tts-auth-')), 'tokens');
    writeFileSync(file, 'sekret-token-1 tts\n');
    const authed = await startTts({ AUTH_TOKENS_FILE: file });
    try {
      expect((await postTts(authed.url, { text: 'Hello', language: 'en' })).status).toBe(401);
      const ok = await postTts(
        authed.url,
        { text: 'Hello', language: 'en' },
        { authorization: 'Bearer sekret-token-1' },
      );
      expect(ok.status).toBe(200);
    } finally {
      await authed.close();
    }
  });
});
