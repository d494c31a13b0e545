import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { systemPrompt, userTurn } from '../../services/agent/src/domain/prompts.js';
import { llmReset } from './subservice-helpers.js';
import { auth as llmAuth, post as llmPost, startLlm, waitFor, type LlmTestServer } from '../llm/helpers.js';
import {
  AGENT_TOKEN,
  agentGet,
  agentPost,
  metricValue,
  sseEvents,
  startAgent,
  type AgentTestServer,
} from './helpers.js';

// The agent in front of the real text LLM service (tiny generated GGUF, greedy) as all three
// upstreams, both on real sockets: every reply can be compared with what the LLM itself answers.

let llm: LlmTestServer;
let agent: AgentTestServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-service-'));
  // A second token with another service's scope: known, but not an agent token.
  writeFileSync(join(dir, 'tokens'), 'other-service-token-0123456789 llm\nfile-agent-token-0123456789\n');
  // One slot: a greedy reply depends on the prompt prefix cached in the slot before it, so each
  // compared call starts from the same cache (after `reset()`).
  llm = await startLlm({ MAX_CONCURRENCY: '1' });
  agent = await startAgent({ LLM_URL: llm.url, AUTH_TOKENS_FILE: join(dir, 'tokens') });
}, 60_000);
afterAll(async () => {
  await agent.close();
  await llm.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What the LLM answers, greedy, to these messages (max 16 tokens, as the agent asks in tests). */
const reset = (): Promise<void> => llmReset(llm.url);

async function llmSays(messages: { role: string; content: string }[], maxTokens = 16): Promise<string> {
  await reset();
  const res = await llmPost(`${llm.url}/v1/chat/completions`, {
    model: 'alpha-2-9b-it',
    messages,
    temperature: 0,
    max_tokens: maxTokens,
  });
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]!.message.content;
}

interface TurnBody {
  response: string;
  intent: string;
  model: string;
  session_id: string;
  processing_time_ms: number;
  intent_source: string;
  fell_back_from: string[];
  history_trimmed: number;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

async function run(body: Record<string, unknown>, path = '/run'): Promise<TurnBody> {
  await reset();
  const res = await agentPost(`${agent.url}${path}`, body);
  const json = (await res.json()) as TurnBody;
  if (res.status !== 200) throw new Error(`POST ${path} ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

describe('info endpoints without a token', () => {
  it('GET / describes the agent', async () => {
    const res = await fetch(`${agent.url}/`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      service: 'ai_agent',
      version: '0.1.0',
      port: agent.server.port,
      status: 'ready',
      docs: '/docs',
    });
  });

  it('GET /health is healthy once an LLM upstream answered', async () => {
    const res = await fetch(`${agent.url}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'healthy', service: 'ai_agent', port: agent.server.port });
    expect(body['llms']).toEqual([
      { id: 'alpha4_service', state: 'up', cooling_down: false },
      { id: 'beta3_service', state: 'up', cooling_down: false },
      { id: 'beta_service', state: 'up', cooling_down: false },
    ]);
  });

  it('/docs and /openapi.json document every spec endpoint', async () => {
    const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    for (const path of [
      '/run',
      '/run/multipart',
      '/chat',
      '/chat/raw',
      '/v1/chat/completions',
      '/v1/models',
    ]) {
      expect(doc.paths).toHaveProperty([path]);
    }
    for (const path of [
      '/analyze',
      '/translate',
      '/summarize',
      '/code',
      '/debug',
      '/sessions',
      '/sessions/{session_id}',
      '/gpu',
    ]) {
      expect(doc.paths).toHaveProperty([path]);
    }
    expect((await fetch(`${agent.url}/docs`)).status).toBe(200);
  });
});

describe('auth', () => {
  it.each([
    ['no token', null],
    ['an unknown token', 'not-a-token-0000000000000'],
    ["another service's token", 'other-service-token-0123456789'],
  ])('refuses %s with 401 on every protected endpoint', async (_what, token) => {
    for (const [method, path] of [
      ['POST', '/run'],
      ['POST', '/chat'],
      ['GET', '/sessions'],
      ['GET', '/v1/models'],
      ['GET', '/gpu'],
      ['GET', '/status'],
    ] as const) {
      const res =
        method === 'GET'
          ? await agentGet(`${agent.url}${path}`, token)
          : await agentPost(`${agent.url}${path}`, { message: 'hi' }, { token });
      expect({ path, status: res.status }).toEqual({ path, status: 401 });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="agent"/);
    }
  });

  it('accepts AI_AGENT_API_TOKEN and a tokens-file token without a scope column (ai_agent by default)', async () => {
    expect((await agentGet(`${agent.url}/sessions`, AGENT_TOKEN)).status).toBe(200);
    expect((await agentGet(`${agent.url}/sessions`, 'file-agent-token-0123456789')).status).toBe(200);
  });
});

describe('/run', () => {
  it('answers chat with the primary LLM, exactly what the LLM says to the same prompt', async () => {
    const reply = await run({ message: 'Hello there', force_intent: 'chat', language: 'en' });
    expect(reply).toMatchObject({
      intent: 'chat',
      model: 'alpha4_service',
      intent_source: 'forced',
      fell_back_from: [],
      history_trimmed: 0,
    });
    expect(reply.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number.isInteger(reply.processing_time_ms)).toBe(true);
    expect(reply.usage?.completion_tokens).toBeGreaterThan(0);
    expect(reply.response).toBe(
      await llmSays([systemPrompt('chat', 'en'), userTurn('chat', 'Hello there', 'en')]),
    );
  });

  it('detects the intent with the rules and says so', async () => {
    const reply = await run({ message: 'Dịch sang tiếng Anh: bệnh nhân đau đầu', language: 'vi' });
    expect(reply).toMatchObject({ intent: 'translate', intent_source: 'rules', model: 'alpha4_service' });
  });

  it('routes code to beta3_service, and force_llm picks the LLM', async () => {
    expect(await run({ message: 'write a function', force_intent: 'code' })).toMatchObject({
      intent: 'code',
      model: 'beta3_service',
    });
    expect(
      await run({ message: 'xin chào', force_intent: 'chat', force_llm: 'beta3_service' }),
    ).toMatchObject({
      model: 'beta3_service',
    });
  });

  it('refuses what it cannot do, with the reason', async () => {
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ message: '' }, 400, /message.*empty/i],
      [{ message: 'hi', force_llm: 'beta_service' }, 422, /force_llm/],
      [{ message: 'hi', force_intent: 'summon' }, 422, /force_intent/],
      [{ message: 'hi', language: 'fr' }, 422, /language/],
      [{ message: 'transcribe this', force_intent: 'transcribe' }, 400, /needs a file.*\/run\/multipart/],
      [{ message: 'play a patient', force_intent: 'patient_sim' }, 400, /patient_id/],
    ];
    for (const [body, status, detail] of cases) {
      const res = await agentPost(`${agent.url}/run`, body);
      expect({ body, status: res.status }).toEqual({ body, status });
      expect(JSON.stringify(await res.json())).toMatch(detail);
    }
  });

  it('streams SSE fragments that add up to the non-streamed reply, then [DONE]', async () => {
    const message = 'Tell me about fever';
    const whole = await run({ message, force_intent: 'chat', language: 'en' });
    const res = await agentPost(`${agent.url}/run`, {
      message,
      force_intent: 'chat',
      language: 'en',
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-agent-intent')).toBe('chat');
    expect(res.headers.get('x-agent-model')).toBe('alpha4_service');
    const events = sseEvents(await res.text());
    expect(events[events.length - 1]).toEqual({ event: null, data: '[DONE]' });
    expect(events.length).toBeGreaterThan(2);
    expect(
      events
        .slice(0, -1)
        .map((e) => e.data)
        .join(''),
    ).toBe(whole.response);
  });
});

describe('sessions', () => {
  it('keeps the history of a session: list, detail with role/content/timestamp, delete, 404', async () => {
    const first = await run({ message: 'first question', force_intent: 'chat', language: 'en' });
    const second = await run({
      message: 'second question',
      force_intent: 'chat',
      language: 'en',
      session_id: first.session_id,
    });
    expect(second.session_id).toBe(first.session_id);
    // The second turn's prompt carried the first exchange: the LLM's answer to exactly that.
    expect(second.response).toBe(
      await llmSays([
        systemPrompt('chat', 'en'),
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: first.response },
        { role: 'user', content: 'second question' },
      ]),
    );
    const list = (await (await agentGet(`${agent.url}/sessions`)).json()) as {
      sessions: { session_id: string; message_count: number }[];
    };
    expect(list.sessions[0]).toMatchObject({ session_id: first.session_id, message_count: 4 });
    const detail = (await (await agentGet(`${agent.url}/sessions/${first.session_id}`)).json()) as {
      messages: { role: string; content: string; timestamp: string; model?: string }[];
    };
    expect(detail.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'first question'],
      ['assistant', first.response],
      ['user', 'second question'],
      ['assistant', second.response],
    ]);
    expect(detail.messages[1]!.model).toBe('alpha4_service');
    for (const m of detail.messages) expect(Number.isNaN(Date.parse(m.timestamp))).toBe(false);
    const del = await fetch(`${agent.url}/sessions/${first.session_id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ deleted: first.session_id });
    const again = await fetch(`${agent.url}/sessions/${first.session_id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(again.status).toBe(404);
    expect((await agentGet(`${agent.url}/sessions/${first.session_id}`)).status).toBe(404);
  });

  it('answers 404 for an id no session could have (too long, odd characters), as for any unknown id', async () => {
    for (const id of ['x'.repeat(129), 'x'.repeat(5000), 'a%20b', '%C3%A9t%C3%A9']) {
      for (const method of ['GET', 'DELETE']) {
        const res = await fetch(`${agent.url}/sessions/${id}`, {
          method,
          headers: { authorization: `Bearer ${AGENT_TOKEN}` },
        });
        expect({ id: id.slice(0, 20), method, status: res.status }).toEqual({
          id: id.slice(0, 20),
          method,
          status: 404,
        });
        expect(((await res.json()) as { detail: string }).detail).toMatch(/does not exist/);
      }
    }
  });

  it('a failed turn leaves the session as it was', async () => {
    const first = await run({ message: 'keep me', force_intent: 'chat' });
    const res = await agentPost(`${agent.url}/chat`, {
      message: 'x'.repeat(20_000), // over the context: 400, nothing recorded
      session_id: first.session_id,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/about \d+ tokens over/);
    const detail = (await (await agentGet(`${agent.url}/sessions/${first.session_id}`)).json()) as {
      messages: unknown[];
    };
    expect(detail.messages).toHaveLength(2);
  });
});

describe('session TTL and trimming', () => {
  let clock = Date.parse('2026-11-22T00:00:00Z');
  let small: AgentTestServer;
  beforeAll(async () => {
    small = await startAgent(
      { LLM_URL: llm.url, AGENT_SESSION_TTL_S: '60', AGENT_CONTEXT_TOKENS: '400', AGENT_MAX_TOKENS: '16' },
      { now: () => clock },
    );
  });
  afterAll(() => small.close());

  it('trims the oldest turns to fit the context, and counts them', async () => {
    const post = async (message: string, session_id: string | null) => {
      const res = await agentPost(`${small.url}/chat`, { message, session_id, language: 'en' });
      expect(res.status).toBe(200);
      return (await res.json()) as TurnBody;
    };
    // Each message is about 90 estimated tokens: the fourth turn no longer has room for the first.
    const long = (n: number) => `${n} ${'word '.repeat(50)}`;
    let reply = await post(long(1), null);
    const id = reply.session_id;
    for (let i = 2; i <= 4; i++) reply = await post(long(i), id);
    expect(reply.history_trimmed).toBeGreaterThan(0);
    expect(await metricValue(small.url, 'agent_history_messages_trimmed_total')).toBeGreaterThan(0);
    // The session itself keeps everything (up to AGENT_SESSION_MAX_MESSAGES).
    const detail = (await (await agentGet(`${small.url}/sessions/${id}`)).json()) as { messages: unknown[] };
    expect(detail.messages).toHaveLength(8);
  });

  it('forgets a session idle past its TTL', async () => {
    const res = await agentPost(`${small.url}/chat`, { message: 'remember me', language: 'en' });
    const { session_id } = (await res.json()) as TurnBody;
    clock += 59_000;
    expect((await agentGet(`${small.url}/sessions/${session_id}`)).status).toBe(200);
    clock += 61_000;
    expect((await agentGet(`${small.url}/sessions/${session_id}`)).status).toBe(404);
    expect(await metricValue(small.url, 'agent_sessions_ended_total', { reason: 'expired' })).toBe(1);
  });
});

describe('fixed-intent endpoints', () => {
  it('/chat, /analyze, /code, /debug, /summarize answer with their intent and model', async () => {
    expect(await run({ message: 'hi', language: 'en' }, '/chat')).toMatchObject({
      intent: 'chat',
      model: 'alpha4_service',
    });
    expect(await run({ message: 'sốt 3 ngày, đau đầu' }, '/analyze')).toMatchObject({ intent: 'analyze' });
    expect(await run({ message: 'sort a list' }, '/code')).toMatchObject({
      intent: 'code',
      model: 'beta3_service',
    });
    expect(await run({ code: 'x = 1/0', error: 'ZeroDivisionError' }, '/debug')).toMatchObject({
      intent: 'debug',
      model: 'beta3_service',
    });
    expect(await run({ text: 'A long text about fever.' }, '/summarize')).toMatchObject({
      intent: 'summarize',
    });
    expect((await agentPost(`${agent.url}/debug`, {})).status).toBe(422);
  });

  it('/code and /debug stream too', async () => {
    for (const [path, body] of [
      ['/code', { message: 'hello world in C', stream: true }],
      ['/debug', { code: 'print(x)', error: 'NameError', stream: true }],
    ] as const) {
      const res = await agentPost(`${agent.url}${path}`, body);
      expect(res.headers.get('x-agent-model')).toBe('beta3_service');
      const events = sseEvents(await res.text());
      expect(events.at(-1)?.data).toBe('[DONE]');
    }
  });

  it('/translate answers with the spec fields', async () => {
    const res = await agentPost(`${agent.url}/translate`, { text: 'đau bụng', target_lang: 'en' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      source_text: 'đau bụng',
      target_lang: 'en',
      intent: 'translate',
      model: 'alpha4_service',
    });
    expect(body['translated']).toBe((body['response'] as string).trim());
    expect((await agentPost(`${agent.url}/translate`, {})).status).toBe(422);
  });
});

describe('/chat/raw and the OpenAI-compatible endpoints', () => {
  it('/chat/raw sends the messages with the system override', async () => {
    const messages = [
      { role: 'system', content: 'ignored' },
      { role: 'user', content: 'Ping' },
    ];
    await reset();
    const res = await agentPost(`${agent.url}/chat/raw`, {
      messages,
      system: 'Reply briefly.',
      max_tokens: 16,
      temperature: 0,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { response: string; model: string };
    expect(body.model).toBe('alpha4_service');
    expect(body.response).toBe(
      await llmSays([
        { role: 'system', content: 'Reply briefly.' },
        { role: 'user', content: 'Ping' },
      ]),
    );
  });

  it('/v1/models lists the three LLM identifiers', async () => {
    const body = (await (await agentGet(`${agent.url}/v1/models`)).json()) as {
      object: string;
      data: unknown[];
    };
    expect(body.object).toBe('list');
    expect(body.data).toEqual(
      ['alpha4_service', 'beta3_service', 'beta_service'].map((id) =>
        expect.objectContaining({ id, object: 'model', owned_by: 'local' }),
      ),
    );
  });

  it('the official openai SDK works unchanged, streamed and not', async () => {
    const client = new OpenAI({ apiKey: AGENT_TOKEN, baseURL: `${agent.url}/v1`, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'Say something' }];
    await reset();
    const completion = await client.chat.completions.create({
      model: 'beta_service',
      messages,
      temperature: 0,
      max_completion_tokens: 12,
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('beta_service');
    expect(completion.choices[0]!.message.content).toBe(await llmSays(messages, 12));
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);

    await reset();
    const stream = await client.chat.completions.create({
      model: 'alpha4_service',
      messages,
      temperature: 0,
      max_completion_tokens: 12,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: unknown = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(completion.choices[0]!.message.content);
    expect(['stop', 'length']).toContain(finish);
    expect(usage).toMatchObject({ completion_tokens: expect.any(Number) });

    await expect(client.chat.completions.create({ model: 'gpt-4', messages })).rejects.toMatchObject({
      status: 404,
      error: expect.objectContaining({ message: expect.stringMatching(/alpha4_service/) }),
    });
    const unauthorized = new OpenAI({
      apiKey: 'wrong-token-000000000000',
      baseURL: `${agent.url}/v1`,
      maxRetries: 0,
    });
    await expect(unauthorized.models.list()).rejects.toMatchObject({ status: 401 });
  });
});

describe('a client that goes away', () => {
  it('stops the upstream generation and frees its slot', async () => {
    const slotsInUse = async (): Promise<number> => {
      const s = (await (await fetch(`${llm.url}/status`, { headers: llmAuth })).json()) as {
        slots: { in_use: number };
      };
      return s.slots.in_use;
    };
    const aborted = (): Promise<number> => metricValue(llm.url, 'llm_request_aborted_total');
    const before = await aborted();
    const controller = new AbortController();
    const res = await agentPost(
      `${agent.url}/chat`,
      { message: 'Write a very long story', stream: true, max_tokens: 3000, language: 'en' },
      { signal: controller.signal },
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // the first fragment arrived: the generation runs
    expect(await slotsInUse()).toBe(1);
    controller.abort();
    await waitFor(async () => (await slotsInUse()) === 0, 5000);
    await waitFor(async () => (await aborted()) > before, 5000);
  });
});

describe('/gpu', () => {
  it('reports the GPUs through the kit (none here: available false, device cpu)', async () => {
    const res = await agentGet(`${agent.url}/gpu`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ available: false, device: 'cpu' });
  });
});

describe('metrics', () => {
  it('counts intents and upstream calls with bounded labels', async () => {
    expect(
      await metricValue(agent.url, 'agent_intents_total', { intent: 'chat', source: 'forced' }),
    ).toBeGreaterThan(0);
    expect(
      await metricValue(agent.url, 'agent_intents_total', { intent: 'translate', source: 'rules' }),
    ).toBe(1);
    expect(
      await metricValue(agent.url, 'agent_upstream_requests_total', {
        upstream: 'alpha4_service',
        outcome: 'ok',
      }),
    ).toBeGreaterThan(0);
    expect(await metricValue(agent.url, 'agent_upstream_up', { upstream: 'beta_service' })).toBe(1);
    expect(
      await metricValue(agent.url, 'http_requests_total', { route: '/run', status: '200' }),
    ).toBeGreaterThan(0);
    expect(await metricValue(agent.url, 'agent_overhead_seconds_count')).toBeGreaterThan(0);
  });
});
