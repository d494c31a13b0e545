/* eslint-disable @typescript-eslint/no-deprecated -- the spec names the field max_tokens; the SDK deprecates it for max_completion_tokens (both work) */
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { describeReal } from '../fixtures/real-component.js';
import OpenAI from 'openai';
import sharp from 'sharp';
import { type RunningServer } from '@clinicalsuite/kit';
import { type MedllmService } from '../../services/medllm/src/app.js';
import { DEFAULT_SYSTEM_PROMPT } from '../../services/medllm/src/config.js';
import { guardText } from '../../services/medllm/src/domain/certainty.js';
import { ensureTinyMtmdGguf } from '../fixtures/models/tiny-mtmd-gguf.js';
import { metricValue, waitFor } from '../kit/helpers.js';
import { FAKE_IMAGE_TOKENS, writeFakeLlamaServer } from './fake-llama-server.js';
import { findLlamaServer, startMedllmService } from './helpers.js';

/**
 * The medical multimodal LLM service through the official `openai` SDK, twice: against a fake
 * llama-server (a Node script the service starts and manages like the real one; it speaks
 * llama-server's API and records what it received, so the tests see the image bytes arrive), and
 * against the real llama-server with the tiny generated multimodal model (skipped, with the
 * reason, when the binary is not built).
 */

// ---------------------------------------------------------------------------------------------
// Images.

async function pngOf(width = 32, height = 24): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 90 } } })
    .png()
    .toBuffer();
}

const dataUrl = (mime: string, bytes: Buffer): string => `data:${mime};base64,${bytes.toString('base64')}`;
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A valid small PNG whose header claims `width` x `height` (CRC fixed): a pixel bomb. */
async function pixelBomb(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await pngOf(8, 8));
  // Signature (8), IHDR length (4), 'IHDR' (4), width, height at 16 and 20; CRC over type + data.
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

const imageMessage = (text: string, ...urls: string[]): OpenAI.Chat.ChatCompletionMessageParam => ({
  role: 'user',
  content: [
    { type: 'text', text },
    ...urls.map((url) => ({ type: 'image_url' as const, image_url: { url } })),
  ],
});

// ---------------------------------------------------------------------------------------------
// The service under test.

interface TestServer {
  readonly service: MedllmService;
  readonly server: RunningServer;
  readonly url: string;
  readonly openai: OpenAI;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

async function startMedllm(env: Record<string, string>, waitReady = true): Promise<TestServer> {
  const { service, server, logs } = await startMedllmService(env);
  if (waitReady) await waitFor(() => service.backend.ready !== undefined, 60_000);
  const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  return { service, server, url: server.url, openai, logs, close: () => server.shutdown('test finished') };
}

/**
 * The service in front of the fake llama-server (fake model and projector files in a temp
 * directory); `close` stops it and removes the directory.
 */
async function startWithFakeBackend(env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'medllm-fake-'));
  const binary = writeFakeLlamaServer(dir);
  writeFileSync(join(dir, 'model.gguf'), 'fake');
  writeFileSync(join(dir, 'mmproj.gguf'), 'fake');
  const srv = await startMedllm({
    LLAMA_SERVER_PATH: binary,
    MODEL_PATH: join(dir, 'model.gguf'),
    MMPROJ_PATH: join(dir, 'mmproj.gguf'),
    ...env,
  });
  return {
    ...srv,
    close: async () => {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The SDK's error for a refused request. */
async function refusal(
  promise: Promise<unknown>,
): Promise<{ status: number; message: string; code: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OpenAI.APIError) {
      return { status: error.status ?? 0, message: error.message, code: error.code };
    }
    throw error;
  }
  throw new Error('the request was not refused');
}

async function postRaw(
  url: string,
  body: unknown,
): Promise<{ status: number; body: { error: { message: string; type: string; code: string } } }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { error: { message: string; type: string; code: string } },
  };
}

const MODEL = 'medmodel-1.5-4b-it';

// ---------------------------------------------------------------------------------------------

describe('certainty guard (unit)', () => {
  it('hedges unhedged certainty, keeps negated phrases and phrases from the prompt', () => {
    expect(
      guardText('rewrite', '', 'This is definitely pneumonia. It confirms the diagnosis of TB.'),
    ).toEqual({
      text: 'This is likely pneumonia. It is consistent with the diagnosis of TB.',
      findings: [
        { phrase: 'definitely', replacement: 'likely' },
        { phrase: 'confirms the diagnosis of', replacement: 'is consistent with the diagnosis of' },
      ],
    });
    expect(guardText('rewrite', '', 'We cannot be certainly sure; không chắc chắn.').findings).toEqual([]);
    expect(
      guardText('rewrite', 'Is it definitely a fracture?', 'It is definitely a fracture.').findings,
    ).toEqual([]);
    expect(guardText('rewrite', '', 'Chắc chắn là viêm phổi.').text).toBe('Có khả năng là viêm phổi.');
    expect(guardText('flag', '', 'Definitely.')).toEqual({
      text: 'Definitely.',
      findings: [{ phrase: 'Definitely', replacement: null }],
    });
  });

  it('never rewrites a measurement or a reported fact', () => {
    const prompt = 'Describe this chest X-ray.';
    for (const text of [
      'Oxygen saturation was 100% on room air.',
      'The left lung is 100 % opacified.',
      'Sensitivity is 100% for this finding.',
      'Fracture confirmed by CT last week is unchanged.',
      'The patient confirmed that he smokes.',
      'The biopsy confirms the diagnosis of lymphoma.',
      'Further tests that confirm the infection are needed.',
      'A normal D-dimer rules out pulmonary embolism in low-risk patients.',
      'Recommend CT to rule out pulmonary embolism.',
      'Reed-Sternberg cells are diagnostic of Hodgkin lymphoma.',
      'The tumour was definitively diagnosed by biopsy in 2019.',
      'It was conclusively shown on MRI.',
      'This is almost certainly pneumonia.',
      'Bác sĩ đã khẳng định chẩn đoán.',
      'Gãy xương được khẳng định bằng CT.',
    ]) {
      expect(guardText('rewrite', prompt, text)).toEqual({ text, findings: [] });
    }
  });

  it('hedges the model’s own certainty: first person, 100% sure, and conclusions it draws from the image', () => {
    const cases: [string, string][] = [
      ['I am certain this is pneumonia.', 'I am fairly confident this is pneumonia.'],
      ["I'm 100% sure it is a fracture.", "I'm fairly confident it is a fracture."],
      ['We are confident in this reading.', 'We are fairly confident in this reading.'],
      ['It is absolutely certain that this is TB.', 'It is fairly certain that this is TB.'],
      ['The mass is 100% certain to be malignant.', 'The mass is fairly certain to be malignant.'],
      ['These findings confirm pneumonia.', 'These findings are consistent with pneumonia.'],
      ['This confirms the diagnosis.', 'This is consistent with the diagnosis.'],
      ['These features are diagnostic of sarcoidosis.', 'These features are suggestive of sarcoidosis.'],
      ['The image clearly rules out a pneumothorax.', 'The image clearly makes less likely a pneumothorax.'],
      ['This is definitively a fracture.', 'This is probably a fracture.'],
      ['Tôi khẳng định đây là viêm phổi.', 'Tôi gợi ý đây là viêm phổi.'],
      ['Không nghi ngờ gì nữa, đây là lao.', 'Nhiều khả năng, đây là lao.'],
    ];
    for (const [text, hedged] of cases) expect(guardText('rewrite', '', text).text).toBe(hedged);
    expect(guardText('rewrite', '', 'I am not certain; we cannot be 100% sure.').findings).toEqual([]);
    expect(guardText('rewrite', '', 'SpO2 was 100% and the patient is definitely improving.')).toEqual({
      text: 'SpO2 was 100% and the patient is likely improving.',
      findings: [{ phrase: 'definitely', replacement: 'likely' }],
    });
  });

  it('gives the same text streamed in any pieces as whole', async () => {
    const { CertaintyGuard } = await import('../../services/medllm/src/domain/certainty.js');
    const text =
      'The film shows an opacity that is without a doubt consolidation; this rules out effusion. Undoubtedly.';
    const whole = guardText('rewrite', '', text).text;
    for (const size of [1, 2, 3, 7, 13]) {
      const guard = new CertaintyGuard('rewrite', '');
      let out = '';
      for (let i = 0; i < text.length; i += size) out += guard.push(text.slice(i, i + size));
      out += guard.flush();
      expect(out).toBe(whole);
    }
    expect(whole).toBe(
      'The film shows an opacity that is most likely consolidation; this makes less likely effusion. Likely.',
    );
    // Context decides some phrases (who concludes, what follows, a word cut mid-stream): the same
    // whichever way the stream is cut.
    const mixed =
      'Fracture confirmed by CT last week. SpO2 100% on air. I am 100% sure these findings confirm it; ' +
      'the tumour was definitively diagnosed by biopsy, but this is definitively new. Indefinitely stable. ' +
      'Almost certainly benign; certainly not malignant. Tôi khẳng định điều đó, bác sĩ đã khẳng định.';
    const mixedWhole = guardText('rewrite', '', mixed).text;
    expect(mixedWhole).toBe(
      'Fracture confirmed by CT last week. SpO2 100% on air. I am fairly confident these findings are consistent with it; ' +
        'the tumour was definitively diagnosed by biopsy, but this is probably new. Indefinitely stable. ' +
        'Almost certainly benign; likely not malignant. Tôi gợi ý điều đó, bác sĩ đã khẳng định.',
    );
    for (let size = 1; size <= 45; size++) {
      const guard = new CertaintyGuard('rewrite', '');
      let out = '';
      for (let i = 0; i < mixed.length; i += size) out += guard.push(mixed.slice(i, i + size));
      out += guard.flush();
      expect(out).toBe(mixedWhole);
    }
  });
});

describe('without a backend binary', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startMedllm(
      { LLAMA_SERVER_PATH: '/nonexistent/llama-server', MODEL_PATH: '/nonexistent/model.gguf' },
      false,
    );
  });
  afterAll(() => srv.close());

  it('/health answers 502 naming what is missing, completions 502', async () => {
    await waitFor(() => srv.service.backend.state === 'waiting', 10_000);
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(502);
    const body = (await health.json()) as { status: string; backend: { state: string; detail: string } };
    expect(body.status).toBe('unhealthy');
    expect(body.backend.detail).toContain('/nonexistent/llama-server');
    expect(body.backend.detail).toContain('/nonexistent/model.gguf');
    const refused = await refusal(
      srv.openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] }),
    );
    expect(refused.status).toBe(502);
    expect(refused.message).toContain('Backend not ready');
  });

  it('checks the request before the backend: a broken image is 400 without a model, a good one 502', async () => {
    const ask = (url: string) =>
      refusal(
        srv.openai.chat.completions.create({
          model: MODEL,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What does this show?' },
                { type: 'image_url', image_url: { url } },
              ],
            },
          ],
        }),
      );
    const cases: [string, RegExp][] = [
      ['data:image/png;base64,iVBOR$$$w0KGgo==', /not valid base64/],
      ['data:image/png,not-base64', /must be base64-encoded/],
      [dataUrl('image/png', Buffer.from('hello world, not a png')), /not a readable image/],
      ['https://example.org/xray.png', /must be a base64 data URL/],
    ];
    for (const [url, message] of cases) {
      const refused = await ask(url);
      expect(refused).toMatchObject({ status: 400 });
      expect(refused.message).toMatch(message);
    }
    const unknownModel = await refusal(
      srv.openai.chat.completions.create({ model: 'other', messages: [{ role: 'user', content: 'hello' }] }),
    );
    expect(unknownModel).toMatchObject({ status: 400, code: 'model_not_found' });
    const wellFormed = await ask(dataUrl('image/png', await pngOf()));
    expect(wellFormed.status).toBe(502);
    expect(wellFormed.message).toContain('Backend not ready');
  });

  it('GPU status without a GPU', async () => {
    const res = await fetch(`${srv.url}/gpu/status`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ available: false, device: 'cpu' });
  });
});

describe('a backend that cannot load its model', () => {
  let dir: string;
  let srv: TestServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'medllm-broken-'));
    const binary = join(dir, 'llama-server');
    // What llama-server prints and does for a GGUF it cannot read.
    writeFileSync(
      binary,
      `#!${process.execPath}\nconsole.error('llama_model_load: error loading model: tensor data is not within the file bounds');\n` +
        "console.error('main: exiting due to model loading error');\nprocess.exit(1);\n",
    );
    chmodSync(binary, 0o755);
    writeFileSync(join(dir, 'model.gguf'), 'truncated');
    writeFileSync(join(dir, 'mmproj.gguf'), 'truncated');
    srv = await startMedllm(
      {
        LLAMA_SERVER_PATH: binary,
        MODEL_PATH: join(dir, 'model.gguf'),
        MMPROJ_PATH: join(dir, 'mmproj.gguf'),
        BACKEND_BACKOFF_MS: '50',
        BACKEND_MAX_BACKOFF_MS: '400',
      },
      false,
    );
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('/health says why (llama-server’s own words) and the restarts back off', async () => {
    await waitFor(() => srv.service.backend.restarts >= 4, 10_000);
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(502);
    const body = (await health.json()) as { backend: { state: string; detail: string; restarts: number } };
    expect(body.backend.state).toMatch(/restarting|starting/);
    if (body.backend.state === 'restarting') {
      expect(body.backend.detail).toMatch(
        /llama-server exited \(code 1\): .*tensor data is not within the file bounds.*; restarting in (200|400) ms/,
      );
    }
    const warnings = srv.logs.filter((l) => l.level === 'warn').map((l) => String(l.msg));
    expect(warnings.some((m) => m.includes('error loading model'))).toBe(true);
    const delays = srv.logs.filter((l) => typeof l.retryInMs === 'number').map((l) => l.retryInMs);
    expect(delays.slice(0, 4)).toEqual([50, 100, 200, 400]);
    expect(
      (
        await refusal(
          srv.openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }),
        )
      ).status,
    ).toBe(502);
  });
});

describe('request bodies: BODY_LIMIT and BODY_MEMORY_LIMIT', () => {
  let srv: TestServer;
  const LIMIT = 2 * 1024 * 1024;
  const MEMORY = 3 * 1024 * 1024;

  beforeAll(async () => {
    srv = await startWithFakeBackend({
      BODY_LIMIT: String(LIMIT),
      BODY_MEMORY_LIMIT: String(MEMORY),
      // One request may hold a whole BODY_LIMIT body (the share is half the budget unless set).
      BODY_MEMORY_SHARE: String(LIMIT),
      BODY_IDLE_TIMEOUT_MS: '2000',
    });
  });
  afterAll(() => srv.close());

  /** A chat request whose JSON is `bytes` long (its text padded). */
  const bodyOf = (bytes: number): string => {
    const request = (content: string) =>
      JSON.stringify({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content }] });
    return request('x'.repeat(bytes - request('').length));
  };
  const post = (body: string) =>
    fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

  it('a body over BODY_LIMIT is 413 payload_too_large', async () => {
    const res = await post(bodyOf(LIMIT + 1024));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });

  it('a body that stops arriving for BODY_IDLE_TIMEOUT_MS is 408 request_timeout, its connection closed', async () => {
    const body = bodyOf(4096);
    const started = Date.now();
    const stalled = request({
      host: '127.0.0.1',
      port: Number(new URL(srv.url).port),
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const answer = new Promise<{ status: number; text: string; connection: string | undefined }>(
      (resolve, reject) => {
        stalled.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text, connection: res.headers.connection }),
          );
        });
        stalled.on('error', reject);
      },
    );
    stalled.write(body.slice(0, 100)); // the rest never comes
    const { status, text, connection } = await answer;
    expect(status).toBe(408);
    expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe('request_timeout');
    expect(connection).toBe('close');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    stalled.destroy();
  });

  it('bodies held at once past BODY_MEMORY_LIMIT: 503 with Retry-After, served once the first is done', async () => {
    const first = bodyOf(LIMIT - 1024);
    const sent = LIMIT - 64 * 1024;
    // The first request declares its length and sends most of it: the service holds what came.
    const held = request({
      host: '127.0.0.1',
      port: Number(new URL(srv.url).port),
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(first) },
    });
    const firstStatus = new Promise<number>((resolve, reject) => {
      held.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      held.on('error', reject);
    });
    held.write(first.slice(0, sent));
    await waitFor(
      async () => (await metricValue(srv.url, 'clinicalsuite_request_body_memory_bytes')) === sent,
      5000,
    );

    const second = await post(bodyOf(LIMIT - 1024));
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).toMatch(/^\d+$/);
    const { error } = (await second.json()) as { error: { code: string; message: string } };
    expect(error).toMatchObject({
      code: 'service_unavailable',
      message: expect.stringContaining('BODY_MEMORY_LIMIT'),
    });

    held.end(first.slice(sent));
    expect(await firstStatus).toBe(200);
    expect((await post(bodyOf(LIMIT - 1024))).status).toBe(200);
  });
});

describe('against a fake llama-server', () => {
  let srv: TestServer;
  let backendUrl: string;
  const received = async (): Promise<{
    received: {
      model: string;
      temperature: number;
      top_p: number;
      max_tokens: number;
      messages: { role: string; text: string; images: { mime: string; bytes: number; sha256: string }[] }[];
    }[];
    aborted: number;
  }> => (await fetch(`${backendUrl}/_received`)).json() as never;

  beforeAll(async () => {
    srv = await startWithFakeBackend();
    backendUrl = srv.service.backend.url!;
  });
  afterAll(() => srv.close());

  it('GET /v1/models and /health', async () => {
    const models = await srv.openai.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      status: 'healthy',
      model: MODEL,
      backend: { name: 'llama-server', state: 'ready', restarts: 0 },
      context_size: 4096,
    });
    const openapi = (await (await fetch(`${srv.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(['/v1/chat/completions', '/v1/models', '/health', '/gpu/status']),
    );
  });

  it('text only: the spec’s defaults, the deployment’s system prompt first', async () => {
    const completion = await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'Answer in English.' },
        { role: 'user', content: 'What does a tension pneumothorax look like?' },
      ],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe(MODEL);
    expect(completion.choices[0]!.message.content).toBe('I see 0 image(s).');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ completion_tokens: 4 });
    const sent = (await received()).received.at(-1)!;
    expect(sent).toMatchObject({ model: MODEL, temperature: 0.7, top_p: 0.95, max_tokens: 1024 });
    expect(sent.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(sent.messages[0]!.text).toBe(`${DEFAULT_SYSTEM_PROMPT}\n\nAnswer in English.`);
    expect(sent.messages[1]!.text).toBe('What does a tension pneumothorax look like?');
  });

  it('image + text: the image reaches the backend byte for byte, its tokens in usage', async () => {
    const png = await pngOf();
    const text = await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Describe the chest X-ray.' }],
    });
    const completion = await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [imageMessage('Describe the chest X-ray.', dataUrl('image/png', png))],
      temperature: 0,
      max_tokens: 50,
    });
    expect(completion.choices[0]!.message.content).toBe('I see 1 image(s).');
    const sent = (await received()).received.at(-1)!;
    expect(sent.max_tokens).toBe(50);
    expect(sent.messages[1]!.images).toEqual([{ mime: 'image/png', bytes: png.length, sha256: sha256(png) }]);
    expect(completion.usage!.prompt_tokens - text.usage!.prompt_tokens).toBe(FAKE_IMAGE_TOKENS);
  });

  it('image + text streamed: chunks, finish reason, usage; JPEG as sent, WEBP as PNG', async () => {
    const jpeg = await sharp(await pngOf(40, 30))
      .jpeg()
      .toBuffer();
    const webp = await sharp(await pngOf(20, 10))
      .webp()
      .toBuffer();
    const stream = await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [imageMessage('Compare these.', dataUrl('image/jpeg', jpeg), dataUrl('image/webp', webp))],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    const finishes: (string | null)[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      for (const choice of chunk.choices) {
        content += choice.delta.content ?? '';
        finishes.push(choice.finish_reason);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(content).toBe('I see 2 image(s).');
    expect(finishes.filter((f) => f !== null)).toEqual(['stop']);
    expect(usage!.completion_tokens).toBe(4);
    const images = (await received()).received.at(-1)!.messages[1]!.images;
    expect(images[0]).toEqual({ mime: 'image/jpeg', bytes: jpeg.length, sha256: sha256(jpeg) });
    expect(images[1]!.mime).toBe('image/png');
  });

  it('max_tokens reached: finish_reason length', async () => {
    const completion = await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
    });
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.choices[0]!.message.content).toBe('I see ');
  });

  describe('bad images: 400 before the backend sees them', () => {
    const cases: [string, () => Promise<string[]>, RegExp][] = [
      [
        'wrong declared type',
        async () => [dataUrl('image/gif', await pngOf())],
        /image type image\/gif is not accepted/,
      ],
      [
        'bytes that are not PNG, JPEG or WEBP',
        async () => [
          dataUrl(
            'image/png',
            await sharp(await pngOf())
              .gif()
              .toBuffer(),
          ),
        ],
        /gif image, not PNG, JPEG or WEBP/,
      ],
      [
        'not an image at all',
        () => Promise.resolve([dataUrl('image/png', Buffer.from('hello world, not a png'))]),
        /not a readable image/,
      ],
      ['bad base64', () => Promise.resolve(['data:image/png;base64,iVBOR$$$w0KGgo==']), /not valid base64/],
      ['a remote URL', () => Promise.resolve(['https://example.org/xray.png']), /must be a base64 data URL/],
      [
        'truncated',
        async () => {
          const png = await sharp({ create: { width: 300, height: 300, channels: 3, background: 'white' } })
            .png({ compressionLevel: 0 })
            .toBuffer();
          return [dataUrl('image/png', png.subarray(0, png.length / 2))];
        },
        /corrupt or truncated/,
      ],
      [
        // JPEG bytes go to the backend as they came: the decode must still catch a cut-off file.
        'a truncated JPEG',
        async () => {
          const jpeg = await sharp({ create: { width: 300, height: 300, channels: 3, background: 'teal' } })
            .jpeg({ quality: 95 })
            .toBuffer();
          return [dataUrl('image/jpeg', jpeg.subarray(0, Math.floor(jpeg.length * 0.9)))];
        },
        /corrupt or truncated/,
      ],
      [
        'a pixel bomb',
        async () => [dataUrl('image/png', await pixelBomb(60_000, 60_000))],
        /60000x60000 \(3600000000 pixels\), over the limit of 50000000/,
      ],
      [
        'too many',
        async () => {
          const url = dataUrl('image/png', await pngOf());
          return [url, url, url, url, url];
        },
        /5 images; at most 4/,
      ],
    ];
    it.each(cases)('%s', async (_name, urls, message) => {
      const before = (await received()).received.length;
      const refused = await refusal(
        srv.openai.chat.completions.create({
          model: MODEL,
          messages: [imageMessage('What is this?', ...(await urls()))],
        }),
      );
      expect(refused.status).toBe(400);
      expect(refused.message).toMatch(message);
      expect((await received()).received.length).toBe(before);
    });

    it('over 50 MB, refused without decoding it', async () => {
      const size = 50 * 1024 * 1024 + 3;
      const url = `data:image/jpeg;base64,${'A'.repeat(Math.ceil(size / 3) * 4)}`;
      const res = await postRaw(srv.url, { model: MODEL, messages: [imageMessage('x', url)] });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('image_too_large');
      expect(res.body.error.message).toContain('over the limit of 50 MB');
    });

    it('an image in a system message', async () => {
      const res = await postRaw(srv.url, {
        model: MODEL,
        messages: [
          {
            role: 'system',
            content: [{ type: 'image_url', image_url: { url: dataUrl('image/png', await pngOf()) } }],
          },
          { role: 'user', content: 'hi' },
        ],
      });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain('user messages only');
    });
  });

  it('a request over the context: 400 saying by how much', async () => {
    const long = await refusal(
      srv.openai.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'word '.repeat(3500) }],
        max_tokens: 1024,
      }),
    );
    expect(long.status).toBe(400);
    expect(long.code).toBe('context_length_exceeded');
    expect(long.message).toMatch(/over the context of 4096 tokens/);
    const url = dataUrl('image/png', await pngOf());
    const images = await refusal(
      srv.openai.chat.completions.create({
        model: MODEL,
        messages: [imageMessage('x', url, url, url, url)],
        max_tokens: 3000,
      }),
    );
    expect(images.status).toBe(400);
    expect(images.message).toMatch(/4 image\(s\) at 280 each/);
    expect(images.message).toMatch(/plus max_tokens 3000 make (\d+), (\d+) over the context/);
    const [, make, over] = /make (\d+), (\d+) over/.exec(images.message)!;
    expect(Number(make) - Number(over)).toBe(4096);
  });

  it('schema errors: 400 (model or messages missing, out of range, unknown model)', async () => {
    const bad: [unknown, RegExp][] = [
      [{ messages: [{ role: 'user', content: 'hi' }] }, /body\.model/],
      [{ model: MODEL }, /body\.messages/],
      [{ model: MODEL, messages: [] }, /body\.messages/],
      [{ model: MODEL, messages: [{ role: 'user', content: 'hi' }], temperature: 2.5 }, /body\.temperature/],
      [{ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4097 }, /body\.max_tokens/],
      [{ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 0 }, /body\.max_tokens/],
      [{ model: MODEL, messages: [{ role: 'user', content: [{ type: 'input_audio' }] }] }, /body\.messages/],
      [{ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, /unknown model "gpt-4o"/],
    ];
    for (const [body, message] of bad) {
      const res = await postRaw(srv.url, body);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(message);
      expect(res.body.error.type).toBe('invalid_request_error');
      expect(res.body.error.code).toBe(
        message.source.includes('unknown model') ? 'model_not_found' : 'validation_error',
      );
    }
  });

  it('an engine error is a 500 with the engine’s message', async () => {
    const refused = await refusal(
      srv.openai.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'ENGINE_ERROR' }],
      }),
    );
    expect(refused.status).toBe(500);
    expect(refused.message).toContain('failed to process image');
    const streamed = await refusal(
      srv.openai.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'ENGINE_ERROR' }],
        stream: true,
      }),
    );
    expect(streamed.status).toBe(500);
  });

  it('the certainty guard hedges an unhedged claim the prompt did not make, streamed or not', async () => {
    const whole = (await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'CERTAIN: what is it?' }],
    })) as OpenAI.Chat.ChatCompletion & { clinical_guard: unknown };
    expect(whole.choices[0]!.message.content).toBe('This is likely pneumonia.');
    expect(whole.clinical_guard).toEqual({
      mode: 'rewrite',
      certainty_phrases: [{ phrase: 'definitely', replacement: 'likely' }],
    });
    let streamed = '';
    for await (const chunk of await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'CERTAIN: what is it?' }],
      stream: true,
    })) {
      streamed += chunk.choices[0]?.delta.content ?? '';
    }
    expect(streamed).toBe('This is likely pneumonia.');
    const echoed = await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'CERTAIN: the radiologist said it is definitely pneumonia' }],
    });
    expect(echoed.choices[0]!.message.content).toBe('This is definitely pneumonia.');
  });

  it('a client that goes away aborts the backend request', async () => {
    const before = (await received()).aborted;
    const controller = new AbortController();
    const stream = await srv.openai.chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: 'SLOW' }], stream: true, max_tokens: 4000 - 100 },
      { signal: controller.signal },
    );
    let pieces = 0;
    // The SDK ends the iteration (or throws an abort error, by version) once aborted.
    await (async () => {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) pieces += 1;
        if (pieces === 3) controller.abort();
      }
    })().catch((error: unknown) => {
      if (!controller.signal.aborted) throw error;
    });
    expect(pieces).toBe(3);
    await waitFor(async () => (await received()).aborted === before + 1, 5000);
    await waitFor(() => srv.service.kit.gate.running === 0, 10_000);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/medllm_request_aborted_total\{reason="client_closed",service="medllm"\} [12]/);
  });

  it('a client of a whole (not streamed) reply that goes away aborts the backend request too', async () => {
    const before = (await received()).aborted;
    const controller = new AbortController();
    const pending = srv.openai.chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: 'SLOW, whole' }], max_tokens: 3000 },
      { signal: controller.signal },
    );
    await waitFor(
      async () => (await received()).received.at(-1)?.messages.at(-1)?.text === 'SLOW, whole',
      10_000,
    );
    controller.abort();
    await expect(pending).rejects.toThrow();
    await waitFor(async () => (await received()).aborted === before + 1, 5000);
    await waitFor(() => srv.service.kit.gate.running === 0, 10_000);
  });

  it('backend killed: 502, then recovery without restarting the service', async () => {
    const pid = srv.service.backend.pid!;
    process.kill(pid, 'SIGKILL');
    await waitFor(() => srv.service.backend.ready === undefined, 5000);
    const refused = await refusal(
      srv.openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(refused.status).toBe(502);
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(502);
    expect(((await health.json()) as { backend: { detail: string } }).backend.detail).toMatch(
      /llama-server exited \(signal SIGKILL\)/,
    );
    await waitFor(() => srv.service.backend.ready !== undefined, 10_000);
    expect(srv.service.backend.pid).not.toBe(pid);
    backendUrl = srv.service.backend.url!;
    const completion = await srv.openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi again' }],
    });
    expect(completion.choices[0]!.message.content).toBe('I see 0 image(s).');
    expect((await fetch(`${srv.url}/health`)).status).toBe(200);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/medllm_backend_restarts_total\{service="medllm"\} 1/);
    expect(metrics).toMatch(/medllm_backend_up\{service="medllm"\} 1/);
  });

  it('metrics: time to first token, inter-token latency, queue time, tokens, images per request', async () => {
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    for (const name of [
      'medllm_time_to_first_token_seconds_count',
      'medllm_inter_token_latency_seconds_count',
      'medllm_e2e_request_latency_seconds_count',
      'medllm_request_queue_time_seconds_count',
    ]) {
      expect(Number(new RegExp(`${name}\\{service="medllm"\\} (\\d+)`).exec(metrics)?.[1])).toBeGreaterThan(
        0,
      );
    }
    expect(metrics).toMatch(/medllm_prompt_tokens_total\{service="medllm"\} [1-9]/);
    // Both text-only and image requests were counted (the series exists, at 0, before any request).
    expect(await metricValue(srv.url, 'medllm_request_images_bucket', { le: '0' })).toBeGreaterThan(0);
    expect(await metricValue(srv.url, 'medllm_request_images_sum')).toBeGreaterThan(0);
    expect(metrics).toMatch(
      /medllm_images_rejected_total\{reason="image_too_many_pixels",service="medllm"\} 1/,
    );
    expect(metrics).toMatch(/medllm_certainty_phrases_total\{action="rewritten",service="medllm"\} 2/);
  });

  it('no request content in the logs at info or above', () => {
    const serious = srv.logs
      .filter((l) => ['info', 'warn', 'error', 'fatal'].includes(l.level as string))
      .map((l) => JSON.stringify(l));
    expect(serious.length).toBeGreaterThan(0);
    for (const line of serious) {
      expect(line).not.toContain('pneumothorax');
      expect(line).not.toContain('Describe the chest');
      expect(line).not.toContain('base64');
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The real llama-server with the tiny generated model and projector.

const found = findLlamaServer();
const binary = 'path' in found ? found.path : undefined;

describeReal(
  'reason' in found ? found.reason : null,
  'against the real llama-server with the tiny multimodal model',
  () => {
    let srv: TestServer;
    let imageTokens: number;
    beforeAll(async () => {
      const tiny = ensureTinyMtmdGguf();
      imageTokens = tiny.imageTokens;
      srv = await startMedllm({
        LLAMA_SERVER_PATH: binary!,
        MODEL_PATH: tiny.model,
        MMPROJ_PATH: tiny.mmproj,
        CONTEXT_SIZE: '1024',
        // Two slots: llama-server splits its context over them, and each must still hold 1024.
        MAX_CONCURRENCY: '2',
        // The tiny projector's embeddings plus the begin and end markers.
        IMAGE_TOKENS: String(tiny.imageTokens + 2),
        LLAMA_SERVER_ARGS: '--no-warmup --metrics',
      });
    }, 120_000);
    afterAll(async () => {
      if ((srv as TestServer | undefined) !== undefined) await srv.close();
    });

    it('every llama-server slot holds the CONTEXT_SIZE the front checks requests against', async () => {
      const slots = (await (await fetch(`${srv.service.backend.url}/slots`)).json()) as { n_ctx: number }[];
      expect(slots.map((s) => s.n_ctx)).toEqual([1024, 1024]);
    });

    it('text only, whole and streamed', async () => {
      const completion = await srv.openai.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'Describe a normal chest X-ray.' }],
        max_tokens: 8,
        temperature: 0,
      });
      expect(completion.choices[0]!.finish_reason).toBe('length');
      expect(completion.usage!.completion_tokens).toBe(8);
      let content = '';
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of await srv.openai.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'Describe a normal chest X-ray.' }],
        max_tokens: 8,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      })) {
        content += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      expect(usage).toMatchObject({ completion_tokens: 8, prompt_tokens: completion.usage!.prompt_tokens });
      expect(content).toBe(completion.choices[0]!.message.content);
    }, 60_000);

    it('image + text: the image goes through the projector (its tokens in usage), streamed too', async () => {
      const text = await srv.openai.chat.completions.create({
        model: MODEL,
        messages: [imageMessage('What does the image show?')],
        max_tokens: 4,
        temperature: 0,
      });
      const png = dataUrl('image/png', await pngOf(100, 80));
      const withImage = await srv.openai.chat.completions.create({
        model: MODEL,
        messages: [imageMessage('What does the image show?', png)],
        max_tokens: 4,
        temperature: 0,
      });
      expect(withImage.usage!.prompt_tokens - text.usage!.prompt_tokens).toBe(imageTokens + 2);
      const jpeg = dataUrl(
        'image/jpeg',
        await sharp(await pngOf(64, 64))
          .jpeg()
          .toBuffer(),
      );
      const webp = dataUrl(
        'image/webp',
        await sharp(await pngOf(64, 64))
          .webp()
          .toBuffer(),
      );
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of await srv.openai.chat.completions.create({
        model: MODEL,
        messages: [imageMessage('Compare.', jpeg, webp)],
        max_tokens: 4,
        stream: true,
        stream_options: { include_usage: true },
      })) {
        if (chunk.usage) usage = chunk.usage;
      }
      expect(usage!.completion_tokens).toBe(4);
      expect(usage!.prompt_tokens).toBeGreaterThan(2 * imageTokens);
    }, 60_000);

    it('bad image and over the context: 400', async () => {
      const bomb = await refusal(
        srv.openai.chat.completions.create({
          model: MODEL,
          messages: [imageMessage('x', dataUrl('image/png', await pixelBomb(60_000, 60_000)))],
        }),
      );
      expect(bomb.status).toBe(400);
      const long = await refusal(
        srv.openai.chat.completions.create({
          model: MODEL,
          messages: [{ role: 'user', content: 'word '.repeat(900) }],
          max_tokens: 200,
        }),
      );
      expect(long.status).toBe(400);
      expect(long.message).toMatch(/over the context of 1024 tokens/);
    });

    it('a client that goes away stops the generation', async () => {
      // llama-server's own count of generated tokens (--metrics), cancelled tasks included.
      const predicted = async (): Promise<number> => {
        const text = await (await fetch(`${srv.service.backend.url}/metrics`)).text();
        return Number(/^llamacpp:tokens_predicted_total (\d+)/m.exec(text)?.[1]);
      };
      const before = await predicted();
      const controller = new AbortController();
      const stream = await srv.openai.chat.completions.create(
        {
          model: MODEL,
          messages: [{ role: 'user', content: 'Tell me everything.' }],
          max_tokens: 700,
          stream: true,
        },
        { signal: controller.signal },
      );
      let pieces = 0;
      await (async () => {
        for await (const chunk of stream) {
          if (chunk.choices[0]?.delta.content) pieces += 1;
          if (pieces === 1) controller.abort();
        }
      })().catch((error: unknown) => {
        if (!controller.signal.aborted) throw error;
      });
      // The slot is free again, and it stopped well before the 700 tokens asked for (the tiny model
      // makes ~5000 tokens/s on one thread: a finished run would count all 700).
      await waitFor(async () => {
        const res = await fetch(`${srv.service.backend.url}/slots`);
        return ((await res.json()) as { is_processing: boolean }[]).every((s) => !s.is_processing);
      }, 5000);
      const generated = (await predicted()) - before;
      expect(generated).toBeGreaterThan(0);
      expect(generated).toBeLessThan(700);
    }, 60_000);

    it('backend killed: 502, then recovery without restarting the service', async () => {
      const pid = srv.service.backend.pid!;
      process.kill(pid, 'SIGKILL');
      await waitFor(() => srv.service.backend.ready === undefined, 5000);
      const refused = await refusal(
        srv.openai.chat.completions.create({
          model: MODEL,
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 2,
        }),
      );
      expect(refused.status).toBe(502);
      await waitFor(() => srv.service.backend.ready !== undefined, 60_000);
      const completion = await srv.openai.chat.completions.create({
        model: MODEL,
        messages: [imageMessage('again', dataUrl('image/png', await pngOf()))],
        max_tokens: 2,
      });
      expect(completion.usage!.completion_tokens).toBe(2);
      expect(srv.service.backend.restarts).toBe(1);
    }, 90_000);
  },
);
