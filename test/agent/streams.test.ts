import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { agentPost, sseEvents, startAgent, type AgentTestServer } from './helpers.js';
import { startScriptedLlm, type ScriptedLlm } from './scripted-llm.js';

// Streams whose upstream misbehaves after it began to answer: it goes silent, or outlives the
// agent's own deadline. The scripted upstream does on cue what the real LLM does only by accident.

let llm: ScriptedLlm;
beforeAll(async () => {
  llm = await startScriptedLlm();
});
afterAll(() => llm.close());

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
