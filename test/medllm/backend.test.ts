/**
 * The medical multimodal LLM service's backend, for real: llama.cpp's own llama-server (built by
 * services/medllm/scripts/build-llama-server.sh from the llama.cpp source node-llama-cpp bundles)
 * started on the tiny generated language model + gemma3 vision projector, sent OpenAI
 * chat-completions requests with a PNG made by sharp as a base64 data URL. The image's embeddings
 * show in `usage.prompt_tokens`. Also the generator's own checks (GGUF header, keys, tensor list as
 * tools/mtmd/clip.cpp loads them).
 *
 * The backend half skips, saying why, when llama-server is not built (a cold build is 10-20 min
 * on 2 cores, longer than a test may take: run the build script, or `.ci/run`, first). Set
 * LLAMA_SERVER_PATH to use another binary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { describeReal } from '../fixtures/real-component.js';
import sharp from 'sharp';

import { GGML_F32, GGUF_VERSION, parseGguf } from '../fixtures/models/gguf-writer.js';
import {
  IMAGE_BEGIN_TOKEN,
  IMAGE_END_TOKEN,
  PROJECTOR_TYPE,
  buildTinyMmprojGguf,
  ensureTinyMtmdGguf,
  tinyMmprojTensorShapes,
  tinyMtmdImageTokens,
} from '../fixtures/models/tiny-mtmd-gguf.js';
import { freePort } from '../kit/helpers.js';
import { findLlamaServer } from './helpers.js';

const SERVED_NAME = 'medmodel-1.5-4b-it';

describe('the tiny multimodal model generator', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tiny-mtmd-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a gemma3 projector GGUF with the keys and tensors clip.cpp loads', () => {
    const files = ensureTinyMtmdGguf({}, dir);
    const mmproj = parseGguf(readFileSync(files.mmproj));
    expect(mmproj.version).toBe(GGUF_VERSION);
    const meta = mmproj.meta;
    expect(meta.get('general.architecture')).toBe('clip');
    expect(meta.get('clip.projector_type')).toBe(PROJECTOR_TYPE);
    expect(meta.get('clip.has_vision_encoder')).toBe(true);
    expect(meta.get('clip.use_gelu')).toBe(true);
    // The keys clip.cpp's load_hparams requires (no default) for a vision projector.
    for (const key of [
      'clip.vision.embedding_length',
      'clip.vision.attention.head_count',
      'clip.vision.feed_forward_length',
      'clip.vision.block_count',
      'clip.vision.projection_dim',
      'clip.vision.attention.layer_norm_epsilon',
      'clip.vision.image_size',
      'clip.vision.patch_size',
    ]) {
      expect(typeof meta.get(key)).toBe('number');
    }
    expect(meta.get('clip.vision.image_mean')).toEqual([0.5, 0.5, 0.5]);
    expect(meta.get('clip.vision.image_std')).toEqual([0.5, 0.5, 0.5]);
    expect(meta.get('clip.vision.image_size')).toBe(64);
    expect(meta.get('clip.vision.patch_size')).toBe(8);
    expect(meta.get('clip.vision.projector.scale_factor')).toBe(2);

    // Every tensor in file order, F32, with the shapes the graph multiplies (ggml order).
    const listed = mmproj.tensors.map((t) => [t.name, t.dims]);
    expect(listed).toEqual(tinyMmprojTensorShapes());
    expect(mmproj.tensors.every((t) => t.type === GGML_F32)).toBe(true);
    const names = new Set(listed.map(([n]) => n));
    for (const required of [
      'v.patch_embd.weight',
      'v.position_embd.weight',
      'v.blk.0.attn_out.weight', // the only per-layer tensor get_tensor requires outright...
      'v.blk.0.ffn_up.weight', // ...with these two
      'v.blk.0.ffn_down.weight',
      'mm.input_projection.weight', // gemma3's projector
      'mm.soft_emb_norm.weight',
    ]) {
      expect(names.has(required)).toBe(true);
    }
    // 64 px / 8 px patches = 8 x 8 positions; ffn_down's ne[0] is not n_embd (else clip.cpp
    // swaps up and down as for old exports).
    const dims = new Map(mmproj.tensors.map((t) => [t.name, t.dims]));
    expect(dims.get('v.position_embd.weight')).toEqual([32, 64]);
    expect(dims.get('v.blk.1.ffn_down.weight')?.[0]).not.toBe(32);
    // 8 x 8 patches pooled 2 x 2 → 16 embeddings an image.
    expect(files.imageTokens).toBe(16);
    expect(tinyMtmdImageTokens({ imageSize: 32, patchSize: 8, mergeFactor: 2 })).toBe(4);
    expect(() => tinyMtmdImageTokens({ imageSize: 60, patchSize: 8 })).toThrow(/multiple of patchSize/);
  });

  it("writes a language model whose width is the projector's output, with the image tokens as control tokens", () => {
    const files = ensureTinyMtmdGguf({}, dir);
    const lm = parseGguf(readFileSync(files.model));
    const mmproj = parseGguf(readFileSync(files.mmproj));
    expect(lm.version).toBe(GGUF_VERSION);
    expect(lm.meta.get('general.architecture')).toBe('llama');
    const nEmbd = lm.meta.get('llama.embedding_length');
    expect(nEmbd).toBe(64);
    // mtmd refuses a projector whose output width differs from the text model's n_embd.
    expect(mmproj.meta.get('clip.vision.projection_dim')).toBe(nEmbd);
    expect(mmproj.tensors.find((t) => t.name === 'mm.input_projection.weight')?.dims[0]).toBe(nEmbd);
    const tokens = lm.meta.get('tokenizer.ggml.tokens') as string[];
    const types = lm.meta.get('tokenizer.ggml.token_type') as number[];
    for (const t of [IMAGE_BEGIN_TOKEN, IMAGE_END_TOKEN]) {
      const id = tokens.indexOf(t);
      expect(id).toBeGreaterThan(0);
      expect(types[id]).toBe(3); // control: one token when specials are parsed
    }
    expect(typeof lm.meta.get('tokenizer.chat_template')).toBe('string');
  });

  it('is deterministic and caches its files', () => {
    expect(buildTinyMmprojGguf().equals(buildTinyMmprojGguf())).toBe(true);
    expect(buildTinyMmprojGguf({ seed: 1 }).equals(buildTinyMmprojGguf())).toBe(false);
    const a = ensureTinyMtmdGguf({}, dir);
    const b = ensureTinyMtmdGguf({}, dir);
    expect(b).toEqual(a);
    expect(ensureTinyMtmdGguf({ imageSize: 32 }, dir).mmproj).not.toBe(a.mmproj);
  });
});

const found = findLlamaServer();

interface Completion {
  choices: { message: { role: string; content: string }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** An X-ray-like test picture: a grey gradient with a bright disc, not square (mtmd resizes it). */
async function testPng(width = 96, height = 80, shift = 0): Promise<Buffer> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const disc = (x - width / 2 - shift) ** 2 + (y - height / 2) ** 2 < (height / 4) ** 2;
      const v = disc ? 230 : Math.round((255 * (x + y)) / (width + height));
      pixels.fill(v, (y * width + x) * 3, (y * width + x) * 3 + 3);
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

const dataUrl = (mime: string, bytes: Buffer): string => `data:${mime};base64,${bytes.toString('base64')}`;

describeReal('reason' in found ? found.reason : null, 'llama-server on the tiny model and projector', () => {
  let child: ChildProcess | undefined;
  let url = '';
  let stderr = '';
  const files = ensureTinyMtmdGguf();

  beforeAll(async () => {
    const binary = (found as { path: string }).path;
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    // The flags the service uses (services/medllm/docs/backend.md), small for the tiny model.
    const args = [
      ...['-m', files.model, '--mmproj', files.mmproj, '--alias', SERVED_NAME],
      ...['--host', '127.0.0.1', '--port', String(port)],
      ...['-c', '2048', '--parallel', '1', '-t', '2', '-tb', '2'],
      ...['--jinja', '--no-webui'],
    ];
    const proc = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-20_000);
    });
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`llama-server exited ${proc.exitCode}:\n${stderr}`);
      try {
        const res = await fetch(`${url}/health`);
        if (res.status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`llama-server not ready in 60 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }, 90_000);

  afterAll(async () => {
    const proc = child;
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
  });

  const chat = async (body: object): Promise<Response> =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: SERVED_NAME, max_tokens: 6, temperature: 0, ...body }),
    });

  it('loads the projector: vision is on, the served name is listed', async () => {
    expect(stderr).toContain('loaded multimodal model');
    const props = (await (await fetch(`${url}/props`)).json()) as {
      modalities: { vision: boolean };
      model_alias: string;
    };
    expect(props.modalities.vision).toBe(true);
    expect(props.model_alias).toBe(SERVED_NAME);
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toContain(SERVED_NAME);
  });

  it("answers an image + text request; the image's tokens show in usage.prompt_tokens", async () => {
    const text = { type: 'text', text: 'Chest X-ray, PA view. Describe the findings.' };
    const image = { type: 'image_url', image_url: { url: dataUrl('image/png', await testPng()) } };
    const withImage = await chat({ messages: [{ role: 'user', content: [text, image] }] });
    expect(withImage.status).toBe(200);
    const a = (await withImage.json()) as Completion;
    const textOnly = await chat({ messages: [{ role: 'user', content: [text] }] });
    expect(textOnly.status).toBe(200);
    const b = (await textOnly.json()) as Completion;

    expect(a.choices[0]?.message.role).toBe('assistant');
    expect(typeof a.choices[0]?.message.content).toBe('string');
    expect(a.choices[0]?.message.content.length).toBeGreaterThan(0);
    // The tiny model never emits its end token: it runs to max_tokens.
    expect(a.choices[0]?.finish_reason).toBe('length');
    expect(a.usage.completion_tokens).toBe(6);
    // 16 image embeddings plus <start_of_image> and <end_of_image>, one token each.
    console.log(
      `prompt_tokens: text only ${b.usage.prompt_tokens}, with a ${files.imageSize}px-resized image ${a.usage.prompt_tokens}`,
    );
    expect(a.usage.prompt_tokens - b.usage.prompt_tokens).toBe(files.imageTokens + 2);
  }, 60_000);

  it('takes JPEG too, two images cost twice, and streams the same text as not streamed', async () => {
    const png = await testPng(64, 64, 10);
    const jpeg = await sharp(png).jpeg().toBuffer();
    const text = { type: 'text', text: 'Compare the two images.' };
    const images = [
      { type: 'image_url', image_url: { url: dataUrl('image/png', png) } },
      { type: 'image_url', image_url: { url: dataUrl('image/jpeg', jpeg) } },
    ];
    const two = (await (
      await chat({ messages: [{ role: 'user', content: [text, ...images] }] })
    ).json()) as Completion;
    const none = (await (await chat({ messages: [{ role: 'user', content: [text] }] })).json()) as Completion;
    expect(two.usage.prompt_tokens - none.usage.prompt_tokens).toBe(2 * (files.imageTokens + 2));

    const res = await chat({
      messages: [{ role: 'user', content: [text, ...images] }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = (await res.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map(
        (e) =>
          JSON.parse(e.slice(6)) as {
            choices: { delta: { content?: string } }[];
            usage?: Completion['usage'];
          },
      );
    const streamed = events.map((e) => e.choices[0]?.delta.content ?? '').join('');
    expect(streamed).toBe(two.choices[0]?.message.content);
    expect(events.find((e) => e.usage)?.usage?.prompt_tokens).toBe(two.usage.prompt_tokens);
  }, 60_000);

  it('refuses bytes that are not an image with a 400 and stays up', async () => {
    const bad = { type: 'image_url', image_url: { url: dataUrl('image/png', Buffer.from('not a picture')) } };
    const res = await chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, bad] }] });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Failed to load image');
    expect((await fetch(`${url}/health`)).status).toBe(200);
  }, 30_000);
});
