import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { agentGet, agentPost, metricValue, startAgent, type AgentTestServer } from './helpers.js';
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
