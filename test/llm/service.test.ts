import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MODEL_MANIFEST } from '@clinicalsuite/kit/models';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { auth, post, startLlm, tinyModelPath, waitFor, type LlmTestServer } from './helpers.js';

describe('the manifest’s file, found under MODELS_DIR', () => {
  let dir: string;
  let srv: LlmTestServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'llm-manifest-'));
    const path = join(dir, MODEL_MANIFEST['llm']!.file);
    mkdirSync(dirname(path), { recursive: true });
    copyFileSync(tinyModelPath(), path);
    srv = await startLlm({ MODEL_PATH: undefined, MODELS_DIR: dir });
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is served with the manifest’s licence beside the name the GGUF gives itself', async () => {
    const license = MODEL_MANIFEST['llm']!.license;
    const status = (await (await fetch(`${srv.url}/status`, { headers: auth })).json()) as {
      model: Record<string, unknown>;
    };
    expect(status.model).toMatchObject({ loaded: true, name: 'tiny-llama-test', license });
    const models = (await (await fetch(`${srv.url}/v1/models`, { headers: auth })).json()) as {
      data: Record<string, unknown>[];
    };
    expect(models.data[0]).toMatchObject({ name: 'tiny-llama-test', license });
  });
});

describe('before the model is there', () => {
  let dir: string;
  let srv: LlmTestServer;
  let modelPath: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'llm-missing-'));
    modelPath = join(dir, 'llm', 'model.gguf');
    srv = await startLlm({ MODEL_PATH: modelPath }, { waitReady: false });
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is not ready, and says which file is missing and how to supply it', async () => {
    await waitFor(
      () => srv.service.host.state === 'waiting' && srv.service.kit.readiness.reason!.includes('not found'),
    );
    const readyz = await fetch(`${srv.url}/readyz`);
    expect(readyz.status).toBe(503);
    const body = (await readyz.json()) as { reason: string };
    expect(body.reason).toContain(modelPath);
    expect(body.reason).toContain('npm run models -- fetch llm');

    const health = await fetch(`${srv.url}/health`, { headers: auth });
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({
      status: 'unhealthy',
      service: 'alpha2_service',
      vllm_server: 'unavailable',
      model: 'alpha-2-9b-it',
      backend: 'node-llama-cpp',
    });
    const chat = await post(`${srv.url}/chat`, { prompt: 'hi' });
    expect(chat.status).toBe(503);
    expect(((await chat.json()) as { detail: string }).detail).toContain('model file not found');
    const completion = await post(`${srv.url}/v1/chat/completions`, {
      model: 'alpha-2-9b-it',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.status).toBe(503);
    expect(((await completion.json()) as { error: { type: string } }).error.type).toBe('server_error');
    // A malformed request is refused as such while the model is missing too.
    const unsupported = await post(`${srv.url}/v1/chat/completions`, {
      model: 'alpha-2-9b-it',
      n: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect([unsupported.status, await unsupported.json()]).toMatchObject([
      400,
      { error: { param: 'n', code: 'unsupported_parameter' } },
    ]);
    const unknownModel = await post(`${srv.url}/v1/chat/completions`, {
      model: 'no-such-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(unknownModel.status).toBe(404);
    expect((await post(`${srv.url}/chat`, { prompt: '' })).status).toBe(422);
    const status = (await (await fetch(`${srv.url}/status`, { headers: auth })).json()) as Record<
      string,
      unknown
    >;
    expect(status).toMatchObject({ status: 'not_ready', model: { loaded: false, path: modelPath } });
  });

  it('loads the model once the file appears, without a restart', async () => {
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dir, 'llm'), { recursive: true });
    copyFileSync(tinyModelPath(), modelPath);
    await waitFor(() => srv.service.kit.readiness.ready, 10_000);
    const health = await fetch(`${srv.url}/health`, { headers: auth });
    expect(health.status).toBe(200);
  });
});

describe('a loaded service', () => {
  let srv: LlmTestServer;
  beforeAll(async () => {
    srv = await startLlm();
  });
  afterAll(() => srv.close());

  it('/health: the spec’s fields, behind the token', async () => {
    expect((await fetch(`${srv.url}/health`)).status).toBe(401);
    const res = await fetch(`${srv.url}/health`, { headers: auth });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      status: 'healthy',
      service: 'alpha2_service',
      vllm_server: 'healthy',
      model: 'alpha-2-9b-it',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/),
      backend: 'node-llama-cpp',
    });
    // The probes stay open for the runner and kubelet.
    expect((await fetch(`${srv.url}/livez`)).status).toBe(200);
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(200);
  });

  it('/chat: response, model, elapsed_time as "1.23s", usage', async () => {
    const res = await post(`${srv.url}/chat`, { prompt: 'Đau đầu, sốt cao', max_tokens: 12, temperature: 0 });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      response: expect.any(String),
      model: 'alpha-2-9b-it',
      elapsed_time: expect.stringMatching(/^\d+\.\d{2}s$/),
      usage: {
        prompt_tokens: expect.any(Number),
        completion_tokens: 12,
        total_tokens: expect.any(Number),
        prompt_tokens_details: { cached_tokens: expect.any(Number) },
      },
    });
    const again = (await (
      await post(`${srv.url}/chat`, { prompt: 'Đau đầu, sốt cao', max_tokens: 12, temperature: 0 })
    ).json()) as Record<string, unknown>;
    expect(again['response']).toBe(body['response']);
  });

  it('/chat: 422 lists the failing field; over the context: 400 saying by how much', async () => {
    const missing = await post(`${srv.url}/chat`, { max_tokens: 3 });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc).toEqual([
      'body',
      'prompt',
    ]);
    const long = await post(`${srv.url}/chat`, { prompt: 'abc '.repeat(2000), max_tokens: 10 });
    expect(long.status).toBe(400);
    expect(((await long.json()) as { detail: string }).detail).toMatch(
      /maximum context length is 4096 tokens.* \d+ tokens over/,
    );
  });

  it('413 for a body over 10 MB', async () => {
    expect(srv.config.BODY_LIMIT).toBe(10 * 1024 * 1024);
    const res = await post(`${srv.url}/v1/chat/completions`, {
      model: 'alpha-2-9b-it',
      messages: [{ role: 'user', content: 'x'.repeat(10 * 1024 * 1024 + 1) }],
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });

  it('/status: model, template, context, slots, uptime, GPU', async () => {
    const status = (await (await fetch(`${srv.url}/status`, { headers: auth })).json()) as Record<
      string,
      unknown
    >;
    expect(status).toMatchObject({
      service: 'alpha2_service',
      status: 'ready',
      reason: null,
      backend: { name: 'node-llama-cpp', gpu: null },
      model: {
        id: 'alpha-2-9b-it',
        loaded: true,
        architecture: 'llama',
        chat_template: { source: 'gguf', wrapper: 'ChatML' },
      },
      context_size: 4096,
      threads: 1,
      uv_threadpool_size: 4,
      slots: { total: 3, in_use: 0, waiting: 0, queue_capacity: 64 },
      gpu: { available: false, device: 'cpu' },
    });
  });

  it('exports vLLM-style metrics after a request', async () => {
    await post(`${srv.url}/chat`, { prompt: 'hi', max_tokens: 8, temperature: 0 });
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    for (const name of [
      'llm_time_to_first_token_seconds_count',
      'llm_inter_token_latency_seconds_count',
      'llm_e2e_request_latency_seconds_count',
      'llm_request_queue_time_seconds_count',
      'llm_prompt_tokens_total',
      'llm_generation_tokens_total',
      'llm_num_requests_running',
      'llm_num_requests_waiting',
      'llm_kv_cache_usage_perc',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}\\{service="llm"\\} [0-9.e-]+$`, 'm'));
    }
    expect(text).toMatch(/^llm_request_success_total\{finished_reason="length",service="llm"\} [1-9]\d*$/m);
  });
});

describe('the deadline', () => {
  let srv: LlmTestServer;
  beforeAll(async () => {
    srv = await startLlm({ REQUEST_TIMEOUT_MS: '300' });
  });
  afterAll(() => srv.close());

  it('answers 504 and stops the generation', async () => {
    const res = await post(`${srv.url}/v1/chat/completions`, {
      model: 'alpha-2-9b-it',
      messages: [{ role: 'user', content: 'go on' }],
      max_tokens: 4000,
      temperature: 0,
    });
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('timeout_error');
    await waitFor(async () =>
      /llm_request_aborted_total\{reason="timeout",service="llm"\} 1\n/.test(
        await (await fetch(`${srv.url}/metrics`)).text(),
      ),
    );
    await waitFor(() => srv.service.host.engine!.contextTokensInUse() === 0);
  });
});
