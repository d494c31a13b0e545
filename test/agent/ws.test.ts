import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { auth as llmAuth, startLlm, waitFor, type LlmTestServer } from '../llm/helpers.js';
import { AGENT_TOKEN, agentPost, startAgent, type AgentTestServer } from './helpers.js';
import { startScriptedLlm, type ScriptedLlm } from './scripted-llm.js';

// WS /ws/chat against the agent in front of the real LLM (tiny model): both ways of authenticating,
// refusals (1008 with a reason, before any work), the frames of a reply, and a socket that closes
// mid-reply stopping the generation.

let llm: LlmTestServer;
let agent: AgentTestServer;
beforeAll(async () => {
  llm = await startLlm({ MAX_CONCURRENCY: '2' });
  agent = await startAgent({ LLM_URL: llm.url });
}, 60_000);
afterAll(async () => {
  await agent.close();
  await llm.close();
});

const wsUrl = (query = ''): string => `${agent.url.replace(/^http/, 'ws')}/ws/chat${query}`;

/** Collects frames as text until `until` says stop (or the socket closes). */
function frames(ws: WebSocket, until: (frames: string[]) => boolean): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const got: string[] = [];
    const onMessage = (data: WebSocket.RawData): void => {
      got.push(
        Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8'),
      );
      if (until(got)) {
        ws.off('message', onMessage);
        resolve(got);
      }
    };
    ws.on('message', onMessage);
    ws.once('close', () => resolve(got));
    ws.once('error', reject);
  });
}

function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
}

const opened = (ws: WebSocket): Promise<void> =>
  new Promise((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });

describe('authentication', () => {
  it('accepts the token as a query parameter and answers auth_ok', async () => {
    const ws = new WebSocket(wsUrl(`?token=${AGENT_TOKEN}`));
    const got = await frames(ws, (f) => f.length >= 1);
    expect(JSON.parse(got[0]!)).toEqual({ type: 'auth_ok' });
    ws.close();
  });

  it('accepts the token as the first frame', async () => {
    const ws = new WebSocket(wsUrl());
    await opened(ws);
    const got = frames(ws, (f) => f.length >= 1);
    ws.send(JSON.stringify({ type: 'auth', token: AGENT_TOKEN }));
    expect(JSON.parse((await got)[0]!)).toEqual({ type: 'auth_ok' });
    ws.close();
  });

  it.each([
    ['a wrong query token', '?token=wrong-token-0000000000', null, 'invalid token'],
    ['a wrong token frame', '', { type: 'auth', token: 'wrong-token-0000000000' }, 'invalid token'],
    ['a chat message before auth', '', { message: 'hi' }, 'authentication required'],
    ['a frame that is not JSON', '', 'hello', 'authentication required'],
  ])('closes with 1008 and a reason on %s, sending nothing else', async (_what, query, first, reason) => {
    const ws = new WebSocket(wsUrl(query));
    const got = frames(ws, () => false);
    const done = closed(ws);
    if (first !== null) {
      await opened(ws);
      ws.send(typeof first === 'string' ? first : JSON.stringify(first));
    }
    const { code, reason: said } = await done;
    expect(code).toBe(1008);
    expect(said).toContain(reason);
    expect(await got).toEqual([]);
  });
});

describe('a reply', () => {
  it('is a metadata frame, the text fragments, then [DONE], the same text as POST /chat', async () => {
    const ws = new WebSocket(wsUrl(`?token=${AGENT_TOKEN}`));
    const got = frames(ws, (f) => f.at(-1) === '[DONE]');
    await opened(ws);
    ws.send(JSON.stringify({ message: 'Hello', language: 'en', force_intent: 'chat', session_id: 'ws-1' }));
    const all = await got;
    ws.close();
    expect(JSON.parse(all[0]!)).toEqual({ type: 'auth_ok' });
    expect(JSON.parse(all[1]!)).toEqual({
      type: 'metadata',
      intent: 'chat',
      model: 'alpha4_service',
      session_id: 'ws-1',
    });
    expect(all.at(-1)).toBe('[DONE]');
    const text = all.slice(2, -1).join('');
    const res = await agentPost(`${agent.url}/chat`, { message: 'Hello', language: 'en' });
    expect(text).toBe(((await res.json()) as { response: string }).response);
    expect(text.length).toBeGreaterThan(0);
  });

  it('continues the session and honours force_llm', async () => {
    const ws = new WebSocket(wsUrl(`?token=${AGENT_TOKEN}`));
    const got = frames(ws, (f) => f.filter((x) => x === '[DONE]').length === 2);
    await opened(ws);
    ws.send(JSON.stringify({ message: 'one', session_id: 'ws-2', force_intent: 'chat' }));
    ws.send(
      JSON.stringify({ message: 'two', session_id: 'ws-2', force_intent: 'chat', force_llm: 'beta_service' }),
    );
    const all = await got;
    ws.close();
    const meta = all
      .filter((f) => f.startsWith('{"type":"metadata"'))
      .map((f) => JSON.parse(f) as { model: string });
    expect(meta.map((m) => m.model)).toEqual(['alpha4_service', 'beta_service']);
    expect(agent.service.sessions.get('ws-2', Date.now())?.messages).toHaveLength(4);
  });

  it('answers an invalid message with an error frame and [DONE], and keeps the socket open', async () => {
    const ws = new WebSocket(wsUrl(`?token=${AGENT_TOKEN}`));
    const got = frames(ws, (f) => f.filter((x) => x === '[DONE]').length === 2);
    await opened(ws);
    ws.send(JSON.stringify({ message: '', language: 'fr' }));
    ws.send(JSON.stringify({ message: 'ok', force_intent: 'chat' }));
    const all = await got;
    ws.close();
    const error = JSON.parse(all[1]!) as { type: string; status: number; message: string };
    expect(error).toMatchObject({ type: 'error', status: 422 });
    expect(error.message).toMatch(/language/);
    expect(all[2]).toBe('[DONE]');
    expect(JSON.parse(all[3]!)).toMatchObject({ type: 'metadata', intent: 'chat' });
  });

  it('a socket closed mid-reply stops the generation', async () => {
    const inUse = async (): Promise<number> =>
      (
        (await (await fetch(`${llm.url}/status`, { headers: llmAuth })).json()) as {
          slots: { in_use: number };
        }
      ).slots.in_use;
    // Replies of up to 3000 tokens: the generation is still running when the socket goes.
    const long = await startAgent({ LLM_URL: llm.url, AGENT_MAX_TOKENS: '3000' });
    const ws = new WebSocket(`${long.url.replace(/^http/, 'ws')}/ws/chat?token=${AGENT_TOKEN}`);
    // Wait for the metadata frame and one fragment: the LLM is generating.
    const got = frames(ws, (f) => f.length >= 3);
    await opened(ws);
    ws.send(JSON.stringify({ message: 'Write a very long story', language: 'en', force_intent: 'chat' }));
    await got;
    expect(await inUse()).toBe(1);
    ws.terminate();
    await waitFor(async () => (await inUse()) === 0, 5000);
    await long.close();
  });
});

describe('against a scripted LLM', () => {
  let scripted: ScriptedLlm;
  beforeAll(async () => {
    scripted = await startScriptedLlm();
  });
  afterAll(() => scripted.close());

  it.each([
    {
      over: 'AGENT_MAX_MESSAGE_CHARS',
      env: { AGENT_MAX_MESSAGE_CHARS: '100' },
      message: 'x'.repeat(101),
      code: 'bad_request',
    },
    {
      over: "the model's context (context_length_exceeded)",
      env: { AGENT_CONTEXT_TOKENS: '256' },
      message: 'word '.repeat(400),
      code: 'context_length_exceeded',
    },
  ])('refuses a message over $over as HTTP does, without calling the LLM', async ({ env, message, code }) => {
    const agent = await startAgent({ LLM_URL: scripted.url, ...env });
    try {
      const http = await agentPost(`${agent.url}/chat`, { message });
      expect(http.status).toBe(400);
      const { detail } = (await http.json()) as { detail: string };
      scripted.calls.length = 0;
      const ws = new WebSocket(`${agent.url.replace(/^http/, 'ws')}/ws/chat?token=${AGENT_TOKEN}`);
      const got = frames(ws, (f) => f.at(-1) === '[DONE]');
      await opened(ws);
      ws.send(JSON.stringify({ message, force_intent: 'chat' }));
      const all = await got;
      ws.close();
      expect(all.slice(1)).toEqual([
        JSON.stringify({ type: 'error', status: 400, code, message: detail }),
        '[DONE]',
      ]);
      expect(scripted.calls).toHaveLength(0);
    } finally {
      await agent.close();
    }
  });

  it('the deadline passing while a fragment waits on a client that does not read: an error frame (504), then [DONE]', async () => {
    const slow = await startAgent({
      LLM_URL: scripted.url,
      REQUEST_TIMEOUT_MS: '1000',
      AGENT_LLM_FIRST_BYTE_TIMEOUT_MS: '60000',
      AGENT_LLM_PROBE_MS: '600000',
    });
    try {
      // 32 MiB of reply in 4 KiB fragments: more than the loopback socket buffers hold, so the agent
      // waits on the client, with fragments already read from the LLM (several to a read) pending.
      scripted.script = {
        kind: 'reply',
        text: '',
        fragments: Array<string>(8192).fill('y'.repeat(4096)),
      };
      const ws = new WebSocket(`${slow.url.replace(/^http/, 'ws')}/ws/chat?token=${AGENT_TOKEN}`);
      const got = frames(ws, (f) => f.at(-1) === '[DONE]');
      await opened(ws);
      ws.send(JSON.stringify({ message: 'hello', language: 'en', force_intent: 'chat' }));
      ws.pause(); // stop reading
      await new Promise((resolve) => setTimeout(resolve, 2000)); // past the deadline
      ws.resume();
      const all = await Promise.race([
        got,
        new Promise<string[]>((resolve) => setTimeout(() => resolve(['(no [DONE] within 10 s)']), 10_000)),
      ]);
      ws.close();
      expect(all.at(-1)).toBe('[DONE]');
      const error = JSON.parse(all.at(-2)!) as { type: string; status: number; code: string };
      expect(error).toMatchObject({ type: 'error', status: 504 });
      // Cut short: fewer fragments than the reply had, and no session kept the partial reply.
      expect(all.length - 4).toBeLessThan(8192);
      const meta = JSON.parse(all[1]!) as { session_id: string };
      expect(slow.service.sessions.get(meta.session_id, Date.now())).toBeUndefined();
    } finally {
      await slow.close();
    }
  }, 30_000);
});
