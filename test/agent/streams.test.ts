import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { AGENT_TOKEN, agentGet, agentPost, sseEvents, startAgent, type AgentTestServer } from './helpers.js';
import { startScriptedLlm, type ScriptedLlm } from './scripted-llm.js';

// Streams whose upstream misbehaves after it began to answer: it goes silent, or outlives the
// agent's own deadline. The scripted upstream does on cue what the real LLM does only by accident.

let llm: ScriptedLlm;
beforeAll(async () => {
  llm = await startScriptedLlm();
});
afterAll(() => llm.close());

describe('an upstream that goes silent in the middle of a stream', () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    agent = await startAgent({
      LLM_URL: llm.url,
      AGENT_LLM_FIRST_BYTE_TIMEOUT_MS: '400',
      AGENT_LLM_PROBE_MS: '600000',
      REQUEST_TIMEOUT_MS: '20000',
    });
  });
  afterAll(() => agent.close());
  afterEach(() => {
    llm.script = { kind: 'reply', text: 'ok' };
  });

  it('ends it after AGENT_LLM_FIRST_BYTE_TIMEOUT_MS without a fragment: an error event, then [DONE]', async () => {
    llm.script = { kind: 'reply', text: '', fragments: ['Sốt ', 'cao'], stallAfter: 1 };
    const started = Date.now();
    const res = await agentPost(`${agent.url}/chat`, { message: 'hello', language: 'en', stream: true });
    expect(res.status).toBe(200);
    const events = sseEvents(await res.text());
    const took = Date.now() - started;
    expect(events[0]).toEqual({ event: null, data: 'Sốt ' });
    expect(events[1]?.event).toBe('error');
    expect(JSON.parse(events[1]!.data)).toEqual({
      error: {
        code: 'upstream_error',
        message: expect.stringMatching(
          /alpha4_service .* sent nothing for 400 ms in the middle of its reply/,
        ),
      },
    });
    // The spec: the agent stream ends with data: [DONE], a failed one too.
    expect(events.at(-1)).toEqual({ event: null, data: '[DONE]' });
    expect(events).toHaveLength(3);
    expect(took).toBeGreaterThanOrEqual(390);
    expect(took).toBeLessThan(5000); // not the 20 s request deadline
    // Cut short: nothing recorded.
    expect(res.headers.get('x-agent-session-id')).not.toBeNull();
    expect((await agentGet(`${agent.url}/sessions/${res.headers.get('x-agent-session-id')}`)).status).toBe(
      404,
    );
  });

  it('lets a slow but steady stream finish: the idle timer restarts with every fragment', async () => {
    // Six fragments 250 ms apart: 1.25 s in all, each gap under the 400 ms idle limit.
    const fragments = ['a', 'b', 'c', 'd', 'e', 'f'];
    llm.script = { kind: 'reply', text: '', fragments, delayMs: 250 };
    const res = await agentPost(`${agent.url}/chat`, { message: 'hello', language: 'en', stream: true });
    const events = sseEvents(await res.text());
    expect(events.map((e) => e.data)).toEqual([...fragments, '[DONE]']);
    expect(events.every((e) => e.event === null)).toBe(true);
  });

  it('over WebSocket: an error frame (502), then [DONE]', async () => {
    llm.script = { kind: 'reply', text: '', fragments: ['one ', 'two'], stallAfter: 1 };
    const ws = new WebSocket(`${agent.url.replace(/^http/, 'ws')}/ws/chat?token=${AGENT_TOKEN}`);
    const frames: string[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        frames.push(data.toString('utf8'));
        if (frames.length === 1) ws.send(JSON.stringify({ message: 'hello there', force_intent: 'chat' }));
        if (frames.at(-1) === '[DONE]') resolve();
      });
      ws.once('error', reject);
    });
    ws.close();
    expect(JSON.parse(frames[1]!)).toMatchObject({ type: 'metadata', intent: 'chat' });
    expect(frames[2]).toBe('one ');
    expect(JSON.parse(frames[3]!)).toMatchObject({
      type: 'error',
      status: 502,
      message: expect.stringMatching(/sent nothing for 400 ms/),
    });
    expect(frames[4]).toBe('[DONE]');
  });
});

describe("a stream that outlives the agent's own deadline", () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    agent = await startAgent({
      LLM_URL: llm.url,
      AGENT_LLM_FIRST_BYTE_TIMEOUT_MS: '60000',
      AGENT_LLM_PROBE_MS: '600000',
      REQUEST_TIMEOUT_MS: '700',
    });
  });
  afterAll(() => agent.close());

  it('ends with the deadline (504) as an error event, then [DONE]', async () => {
    llm.script = { kind: 'reply', text: '', fragments: ['first', 'never'], stallAfter: 1 };
    const res = await agentPost(`${agent.url}/chat`, { message: 'hello', language: 'en', stream: true });
    expect(res.status).toBe(200);
    const events = sseEvents(await res.text());
    expect(events.map((e) => e.event)).toEqual([null, 'error', null]);
    expect(JSON.parse(events[1]!.data)).toMatchObject({ error: { code: 'timeout' } });
    expect(events.at(-1)?.data).toBe('[DONE]');
  });
});
