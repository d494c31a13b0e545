import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import {
  AGENT_TOKEN,
  agentAuth,
  agentGet,
  agentPost,
  metricValue,
  sseEvents,
  startAgent,
  type AgentTestServer,
} from './helpers.js';
import { startScriptedLlm, type ScriptedLlm } from './scripted-llm.js';

// A turn's effects as the upstream and the sessions see them: what a refused or failed turn leaves
// behind (nothing), and the prompt a translate request sends. The scripted upstream fails on cue and
// keeps the exact messages it received.

let llm: ScriptedLlm;
beforeAll(async () => {
  llm = await startScriptedLlm();
});
afterAll(() => llm.close());

interface SessionSummary {
  session_id: string;
  updated_at: string;
  expires_at: string;
  message_count: number;
}

describe('a turn that is refused or fails leaves the sessions as they were', () => {
  let agent: AgentTestServer;
  let clock = Date.parse('2026-11-26T10:00:00Z');
  beforeAll(async () => {
    agent = await startAgent(
      {
        LLM_URL: llm.url,
        AGENT_MAX_SESSIONS: '2',
        AGENT_LLM_RETRIES: '0',
        AGENT_LLM_COOLDOWN_MS: '0',
        AGENT_LLM_PROBE_MS: '600000',
      },
      { now: () => clock },
    );
  });
  afterAll(() => agent.close());
  afterEach(() => {
    llm.script = { kind: 'reply', text: 'ok' };
  });

  const chat = async (body: Record<string, unknown>): Promise<Response> =>
    agentPost(`${agent.url}/chat`, { language: 'en', ...body });
  const list = async (): Promise<SessionSummary[]> =>
    ((await (await agentGet(`${agent.url}/sessions`)).json()) as { sessions: SessionSummary[] }).sessions;
  const created = (): Promise<number> => metricValue(agent.url, 'agent_sessions_created_total');

  it('creates no session, evicts none and extends none', async () => {
    const first = (await (await chat({ message: 'first conversation' })).json()) as { session_id: string };
    clock += 1000;
    const second = (await (await chat({ message: 'second conversation' })).json()) as { session_id: string };
    const before = await list();
    expect(before.map((s) => s.session_id)).toEqual([second.session_id, first.session_id]);
    expect(await created()).toBe(2);

    clock += 1000;
    // Refused by the agent: over the context (400), with and without a session id.
    const long = 'x'.repeat(20_000);
    expect((await chat({ message: long })).status).toBe(400);
    expect((await chat({ message: long, session_id: 'not-yet' })).status).toBe(400);
    expect((await chat({ message: long, session_id: first.session_id })).status).toBe(400);
    // Failed upstream (502), plain and streamed, new and existing sessions.
    llm.script = { kind: 'status', status: 500, body: { error: { message: 'engine crashed' } } };
    expect((await chat({ message: 'hello again' })).status).toBe(502);
    expect((await chat({ message: 'hello again', stream: true })).status).toBe(502);
    expect((await chat({ message: 'hello again', session_id: first.session_id })).status).toBe(502);
    expect((await chat({ message: 'hello again', session_id: 'not-yet', stream: true })).status).toBe(502);

    // Both conversations are still there, unchanged: same order, same expiry, same messages.
    expect(await list()).toEqual(before);
    expect((await agentGet(`${agent.url}/sessions/not-yet`)).status).toBe(404);
    expect(await created()).toBe(2);
    expect(await metricValue(agent.url, 'agent_sessions_ended_total', { reason: 'evicted' })).toBe(0);

    // A turn that succeeds creates its session, and only then the least recently used one goes.
    llm.script = { kind: 'reply', text: 'ok' };
    expect((await chat({ message: 'third conversation', session_id: 'not-yet' })).status).toBe(200);
    expect((await list()).map((s) => s.session_id)).toEqual(['not-yet', second.session_id]);
    expect(await metricValue(agent.url, 'agent_sessions_ended_total', { reason: 'evicted' })).toBe(1);
  });
});

describe('a translate request names its target language', () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    agent = await startAgent({ LLM_URL: llm.url, AGENT_LLM_PROBE_MS: '600000' });
  });
  afterAll(() => agent.close());

  /** The messages the upstream received for one request (the turn's call, not the classifier's). */
  async function promptOf(
    path: string,
    body: Record<string, unknown>,
  ): Promise<{ system: string; user: string }> {
    const from = llm.calls.length;
    const res = await agentPost(`${agent.url}${path}`, body);
    expect(res.status).toBe(200);
    if (body['stream'] === true) await res.text();
    else expect(((await res.json()) as { intent: string }).intent).toBe('translate');
    const call = llm.calls.slice(from).at(-1)!;
    expect(call.messages.map((m) => m.role)).toEqual(['system', 'user']);
    return { system: call.messages[0]!.content, user: call.messages[1]!.content };
  }

  it('"Dịch sang tiếng Anh" with language vi: into English, nothing asks for Vietnamese', async () => {
    const message = 'Dịch sang tiếng Anh: bệnh nhân đau đầu';
    const { system, user } = await promptOf('/run', { message, language: 'vi' });
    expect(system).toMatch(/Dịch sang tiếng Anh\.$/);
    expect(user).toBe(message);
    expect(`${system}\n${user}`).not.toMatch(/tiếng Việt|Vietnamese/);
  });

  it('without diacritics, streamed: the same target', async () => {
    const message = 'dich sang tieng anh: toi bi dau dau';
    const { system, user } = await promptOf('/run', { message, language: 'vi', stream: true });
    expect(system).toMatch(/Dịch sang tiếng Anh\.$/);
    expect(user).toBe(message);
  });

  it('"Translate into Vietnamese" with language en: into Vietnamese, nothing asks for English', async () => {
    const message = 'Translate into Vietnamese: the patient has a headache';
    const { system, user } = await promptOf('/run', { message, language: 'en' });
    expect(system).toMatch(/Translate into Vietnamese\.$/);
    expect(user).toBe(message);
    expect(`${system}\n${user}`).not.toMatch(/into English|tiếng Anh/);
  });

  it('a target other than vi or en (French) is kept', async () => {
    const message = 'Bạn dịch giúp tôi câu này sang tiếng Pháp: uống thuốc sau ăn';
    const { system } = await promptOf('/run', { message, language: 'vi' });
    expect(system).toMatch(/Dịch sang tiếng Pháp\.$/);
  });

  it('no target in the message: the request language, framed as before', async () => {
    const message = 'dịch giúp tôi đoạn này: the patient has a fever';
    const { system, user } = await promptOf('/run', { message, language: 'vi' });
    expect(system).toMatch(/Dịch sang tiếng Việt\.$/);
    expect(user).toBe(`Dịch văn bản sau sang tiếng Việt:\n\n${message}`);
  });

  it('/translate: its target_lang in the system prompt and the request alike', async () => {
    const { system, user } = await promptOf('/translate', { text: 'đau bụng', target_lang: 'fr' });
    expect(system).toMatch(/Dịch sang tiếng Pháp\.$/);
    expect(user).toBe('Dịch văn bản sau sang tiếng Pháp:\n\nđau bụng');
  });
});

describe('/run/multipart as an HTML form sends it', () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    agent = await startAgent({ LLM_URL: llm.url, AGENT_LLM_PROBE_MS: '600000' });
  });
  afterAll(() => agent.close());

  it('takes an empty optional field (session_id, force_intent, language) as absent', async () => {
    llm.script = { kind: 'reply', text: 'Xin chào' };
    const form = new FormData();
    form.append('message', 'hello there');
    form.append('session_id', '');
    form.append('force_intent', '');
    form.append('language', '');
    const res = await fetch(`${agent.url}/run/multipart`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { response: string; intent: string; session_id: string };
    expect(body).toMatchObject({ response: 'Xin chào', intent: 'chat' });
    expect(body.session_id).not.toBe('');
    // language absent: the default (vi) system prompt.
    expect(llm.calls.at(-1)?.messages[0]?.content).toMatch(/tiếng Việt|Vietnamese/);
  });

  it('still refuses a field that is not empty and not valid', async () => {
    const form = new FormData();
    form.append('message', 'hello there');
    form.append('force_intent', 'dance');
    const res = await fetch(`${agent.url}/run/multipart`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(res.status).toBe(422);
  });
});

describe('a session deleted while its turn runs', () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    agent = await startAgent({ LLM_URL: llm.url, AGENT_LLM_PROBE_MS: '600000', AGENT_MAX_SESSIONS: '2' });
  });
  afterAll(() => agent.close());

  /** Starts a turn on `session_id` that the LLM answers in 400 ms, and runs `meanwhile` during it. */
  async function turnDuring(
    body: Record<string, unknown>,
    meanwhile: () => void | Promise<void>,
  ): Promise<Response> {
    const reply = agentPost(`${agent.url}/chat`, { language: 'en', ...body });
    await new Promise((resolve) => setTimeout(resolve, 150));
    await meanwhile();
    return reply;
  }

  it('stays deleted: the reply comes, says so, and the id is gone (the delete wins)', async () => {
    llm.script = { kind: 'reply', text: 'first' };
    expect((await agentPost(`${agent.url}/chat`, { message: 'one', session_id: 'del-1' })).status).toBe(200);
    llm.script = { kind: 'reply', text: 'second', delayMs: 400 };
    const res = await turnDuring({ message: 'two', session_id: 'del-1' }, async () => {
      expect(
        (await fetch(`${agent.url}/sessions/del-1`, { method: 'DELETE', headers: agentAuth })).status,
      ).toBe(200);
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      response: 'second',
      session_id: 'del-1',
      session_deleted: true,
    });
    expect((await agentGet(`${agent.url}/sessions/del-1`)).status).toBe(404);
    expect(agent.service.sessions.get('del-1', Date.now())).toBeUndefined();
  });

  it('streamed too: the session is not brought back', async () => {
    llm.script = { kind: 'reply', text: 'first' };
    await agentPost(`${agent.url}/chat`, { message: 'one', session_id: 'del-2' });
    llm.script = { kind: 'reply', text: '', fragments: ['a', 'b', 'c'], delayMs: 200 };
    const res = await turnDuring({ message: 'two', session_id: 'del-2', stream: true }, async () => {
      await fetch(`${agent.url}/sessions/del-2`, { method: 'DELETE', headers: agentAuth });
    });
    const events = sseEvents(await res.text());
    // The fragments, then the session event saying the exchange was not kept, then [DONE].
    expect(events).toEqual([
      { event: null, data: 'a' },
      { event: null, data: 'b' },
      { event: null, data: 'c' },
      { event: 'session', data: JSON.stringify({ session_id: 'del-2', session_deleted: true }) },
      { event: null, data: '[DONE]' },
    ]);
    expect((await agentGet(`${agent.url}/sessions/del-2`)).status).toBe(404);
  });

  it('over WebSocket: a session frame before [DONE], and the session is not brought back', async () => {
    llm.script = { kind: 'reply', text: 'first' };
    await agentPost(`${agent.url}/chat`, { message: 'one', session_id: 'del-ws' });
    llm.script = { kind: 'reply', text: '', fragments: ['x', 'y'], delayMs: 200 };
    const ws = new WebSocket(`${agent.url.replace(/^http/, 'ws')}/ws/chat?token=${AGENT_TOKEN}`);
    const got: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        const text = data.toString('utf8');
        got.push(text);
        if (text === '[DONE]') resolve();
      });
      ws.once('error', reject);
    });
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ message: 'two', session_id: 'del-ws', language: 'en' }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await fetch(`${agent.url}/sessions/del-ws`, { method: 'DELETE', headers: agentAuth });
    await done;
    ws.close();
    expect(got.slice(-2)).toEqual([
      JSON.stringify({ type: 'session', session_id: 'del-ws', session_deleted: true }),
      '[DONE]',
    ]);
    expect(got).toContain('x');
    expect((await agentGet(`${agent.url}/sessions/del-ws`)).status).toBe(404);
  });

  it('a streamed turn whose session lives sends no session event', async () => {
    llm.script = { kind: 'reply', text: '', fragments: ['a', 'b'] };
    const res = await agentPost(`${agent.url}/chat`, {
      message: 'one',
      session_id: 'kept-1',
      language: 'en',
      stream: true,
    });
    const events = sseEvents(await res.text());
    expect(events.map((e) => e.event)).toEqual([null, null, null]);
    expect((await agentGet(`${agent.url}/sessions/kept-1`)).status).toBe(200);
  });

  it('evicted meanwhile (not deleted): the turn opens it again, and its id works', async () => {
    llm.script = { kind: 'reply', text: 'first' };
    await agentPost(`${agent.url}/chat`, { message: 'one', session_id: 'evict-1' });
    llm.script = { kind: 'reply', text: 'second', delayMs: 400 };
    const res = await turnDuring({ message: 'two', session_id: 'evict-1' }, () => {
      // Two other sessions at AGENT_MAX_SESSIONS 2: evict-1 is dropped.
      const store = agent.service.sessions;
      store.open('other-1', Date.now());
      store.open('other-2', Date.now());
      expect(store.get('evict-1', Date.now())).toBeUndefined();
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ session_id: 'evict-1' });
    expect(body).not.toHaveProperty('session_deleted');
    expect((await agentGet(`${agent.url}/sessions/evict-1`)).status).toBe(200);
  });
});

describe('/run/multipart: a session deleted while the file is read', () => {
  let agent: AgentTestServer;
  let ocr: Server;
  /** Holds each OCR request until the test releases it. */
  let release: () => void = () => undefined;
  let received: () => void = () => undefined;
  beforeAll(async () => {
    ocr = createServer((req, res) => {
      void (async () => {
        await new Promise((resolve) => req.on('end', resolve).resume());
        if (req.url === '/health') {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"healthy"}');
          return;
        }
        if (req.url === '/tts') {
          const tts = { audio_base64: 'UklGRg==', format: 'wav', mime_type: 'audio/wav', sample_rate: 22050 };
          const more = {
            duration_seconds: 1,
            size_bytes: 4,
            engine: 'test',
            voice: 'v',
            language: 'vi',
            speed: 1,
          };
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...tts, ...more }));
          return;
        }
        received();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ text: 'Huyết áp 140/90' }));
      })();
    });
    await new Promise<void>((resolve) => ocr.listen(0, '127.0.0.1', resolve));
    const address = ocr.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const url = `http://127.0.0.1:${port}`;
    agent = await startAgent({ LLM_URL: llm.url, OCR_URL: url, TTS_URL: url, AGENT_LLM_PROBE_MS: '600000' });
  });
  afterAll(async () => {
    release();
    await agent.close();
    await new Promise<void>((resolve) => ocr.close(() => resolve()));
  });

  /** A multipart turn on `id` (an existing session) deleted while its image is OCR'd. */
  async function deletedDuringOcr(id: string, intent: string): Promise<Response> {
    llm.script = { kind: 'reply', text: 'first' };
    expect((await agentPost(`${agent.url}/chat`, { message: 'xin chào', session_id: id })).status).toBe(200);
    llm.script = { kind: 'reply', text: 'analysed' };
    const form = new FormData();
    form.append('message', 'phân tích kết quả này giúp tôi');
    form.append('session_id', id);
    form.append('force_intent', intent);
    const png = Buffer.from([
      0x89,
      0x50,
      0x4e,
      0x47,
      0x0d,
      0x0a,
      0x1a,
      0x0a,
      ...new Array<number>(100).fill(0),
    ]);
    form.append('image', new Blob([png], { type: 'image/png' }), 'scan.png');
    const ocrCalled = new Promise<void>((resolve) => {
      received = resolve;
    });
    const pending = fetch(`${agent.url}/run/multipart`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    await ocrCalled;
    expect(
      (await fetch(`${agent.url}/sessions/${id}`, { method: 'DELETE', headers: agentAuth })).status,
    ).toBe(200);
    release();
    return pending;
  }

  it('stays deleted when the turn goes on to an LLM: session_deleted, the id is gone', async () => {
    const res = await deletedDuringOcr('mp-del', 'analyze');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      response: 'analysed',
      intent: 'analyze',
      session_id: 'mp-del',
      session_deleted: true,
      data: { ocr_text: 'Huyết áp 140/90' },
    });
    expect((await agentGet(`${agent.url}/sessions/mp-del`)).status).toBe(404);
    // The forgotten conversation is not sent to the LLM either.
    expect(JSON.stringify(llm.calls.at(-1)?.messages)).not.toMatch(/xin chào/);
  });

  it('stays deleted when the turn goes on to a sub-service (tts)', async () => {
    const res = await deletedDuringOcr('mp-del-tts', 'tts');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      intent: 'tts',
      session_id: 'mp-del-tts',
      session_deleted: true,
    });
    expect((await agentGet(`${agent.url}/sessions/mp-del-tts`)).status).toBe(404);
  });
});

describe("an LLM's 400/422 in the shapes OpenAI-compatible servers use", () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    agent = await startAgent({
      LLM_URL: llm.url,
      AGENT_LLM_RETRIES: '0',
      AGENT_LLM_COOLDOWN_MS: '0',
      AGENT_LLM_PROBE_MS: '600000',
    });
  });
  afterAll(() => agent.close());
  afterEach(() => {
    llm.script = { kind: 'reply', text: 'ok' };
  });

  /** Status and detail of a /chat turn (plain and streamed) and how many upstream calls it made. */
  async function refused(
    status: number,
    body: unknown,
    stream = false,
  ): Promise<{ status: number; detail: string; calls: number }> {
    llm.script = { kind: 'status', status, body };
    const from = llm.calls.length;
    const res = await agentPost(`${agent.url}/chat`, { message: 'hello', language: 'en', stream });
    const json = (await res.json()) as { detail?: string; error?: { message?: string } };
    return {
      status: res.status,
      detail: json.detail ?? json.error?.message ?? '',
      calls: llm.calls.length - from,
    };
  }

  it.each([
    [
      "TGI's 422 (a string `error`)",
      422,
      {
        error:
          'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`',
        error_type: 'validation',
      },
      /answered 422: Input validation error: `inputs` tokens \+ `max_new_tokens` must be <= 4096/,
    ],
    [
      "older vLLM's 400 (a top-level `message`)",
      400,
      {
        object: 'error',
        message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
      /answered 400: This model's maximum context length is 4096 tokens/,
    ],
    [
      'a prompt over "must have less than" its tokens',
      422,
      {
        error: 'Input validation error: `inputs` must have less than 4096 tokens. Given: 5000',
        error_type: 'validation',
      },
      /must have less than 4096 tokens/,
    ],
    [
      'an input token count that exceeds the limit',
      400,
      {
        error: {
          message: 'The input token count (5000) exceeds the maximum number of tokens allowed (4096).',
        },
      },
      /input token count \(5000\) exceeds/,
    ],
    [
      'max_tokens too large',
      400,
      {
        error: {
          message: 'max_tokens is too large: 5000. This model supports at most 4096 completion tokens',
        },
      },
      /max_tokens is too large/,
    ],
    [
      'a value of a parameter the client sent',
      400,
      {
        error: {
          message: 'Invalid temperature: 3 is greater than the maximum of 2',
          type: 'invalid_request_error',
          param: 'temperature',
        },
      },
      /answered 400: Invalid temperature/,
    ],
    [
      "TGI's validation error on a parameter",
      422,
      { error: 'Input validation error: `top_p` must be > 0.0 and < 1.0', error_type: 'validation' },
      /answered 422: Input validation error: `top_p`/,
    ],
  ])(
    "is the client's error: 400 with the LLM's message, no other upstream tried (%s)",
    async (_, status, body, detail) => {
      for (const stream of [false, true]) {
        const got = await refused(status, body, stream);
        expect(got).toEqual({ status: 400, detail: expect.stringMatching(detail), calls: 1 });
      }
    },
  );

  it.each([
    [
      'a parameter this upstream does not support',
      400,
      {
        error: {
          message: "Unsupported parameter: 'max_tokens' is not supported with this model.",
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'unsupported_parameter',
        },
      },
    ],
    ['a 400 that names nothing the client sent', 400, { error: { message: 'engine refused the request' } }],
    ['a model name it does not serve', 404, { error: { message: 'The model `x` does not exist.' } }],
  ])('is the configuration: falls back to every upstream, then 502 (%s)', async (_, status, body) => {
    const got = await refused(status, body);
    expect(got).toEqual({
      status: 502,
      detail: expect.stringMatching(/^Every LLM upstream failed/),
      calls: 3,
    });
  });
});
