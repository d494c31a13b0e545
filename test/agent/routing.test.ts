import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startLlm, type LlmTestServer } from '../llm/helpers.js';
import {
  agentGet,
  agentPost,
  closedPort,
  metricValue,
  sseEvents,
  startAgent,
  type AgentTestServer,
} from './helpers.js';

// Fallback across the three upstreams with real LLM services (the tiny model): the primary is its
// own LLM process, killed mid-test; a "slow" primary is a socket that accepts and never answers.

let shared: LlmTestServer;
beforeAll(async () => {
  shared = await startLlm({ MAX_CONCURRENCY: '2' });
}, 60_000);
afterAll(() => shared.close());

async function chat(agent: AgentTestServer, extra: Record<string, unknown> = {}): Promise<Response> {
  return agentPost(`${agent.url}/chat`, { message: 'hello', language: 'en', ...extra });
}

const metric = (agent: AgentTestServer, name: string, labels: Record<string, string> = {}): Promise<number> =>
  metricValue(agent.url, name, labels);

/** Accepts TCP connections and never answers: an upstream that hangs. */
async function blackHole(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('the primary LLM dies mid-test', () => {
  let primary: LlmTestServer;
  let agent: AgentTestServer;
  let clock = Date.parse('2026-11-22T00:00:00Z');
  beforeAll(async () => {
    primary = await startLlm({ MAX_CONCURRENCY: '1' });
    agent = await startAgent(
      {
        AGENT_ALPHA4_URL: primary.url,
        AGENT_BETA3_URL: shared.url,
        AGENT_BETA_URL: shared.url,
        AGENT_LLM_COOLDOWN_MS: '30000',
        AGENT_LLM_RETRIES: '1',
        AGENT_LLM_PROBE_MS: '600000', // no background probe ends the cooldown during the test
      },
      { now: () => clock },
    );
  }, 60_000);
  afterAll(async () => {
    await agent.close();
    await primary.close();
  });

  it('answers from alpha4_service while it is up', async () => {
    const res = await chat(agent);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ model: 'alpha4_service', fell_back_from: [] });
  });

  it('falls back to beta_service when alpha4_service is killed, then cools alpha4 down', async () => {
    await primary.close();
    const res = await chat(agent);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ model: 'beta_service', fell_back_from: ['alpha4_service'] });
    expect(
      await metric(agent, 'agent_upstream_fallbacks_total', { from: 'alpha4_service', to: 'beta_service' }),
    ).toBe(1);
    expect(
      await metric(agent, 'agent_upstream_retries_total', {
        upstream: 'alpha4_service',
        reason: 'connection',
      }),
    ).toBe(1);
    expect(await metric(agent, 'agent_upstream_cooldowns_total', { upstream: 'alpha4_service' })).toBe(1);
    const health = (await (await fetch(`${agent.url}/health`)).json()) as {
      llms: { id: string; cooling_down: boolean }[];
    };
    expect(health.llms.find((l) => l.id === 'alpha4_service')?.cooling_down).toBe(true);
  });

  it('skips the cooling upstream without trying it', async () => {
    const attempts = () =>
      metric(agent, 'agent_upstream_requests_total', { upstream: 'alpha4_service', outcome: 'error' });
    const before = await attempts();
    const res = await chat(agent);
    expect(await res.json()).toMatchObject({ model: 'beta_service', fell_back_from: [] });
    expect(await attempts()).toBe(before);
  });

  it('tries a forced upstream first though it cools down, and names it in fell_back_from', async () => {
    const attempts = () =>
      metric(agent, 'agent_upstream_requests_total', { upstream: 'alpha4_service', outcome: 'error' });
    const before = await attempts();
    const res = await chat(agent, { force_llm: 'alpha4_service' });
    expect(await res.json()).toMatchObject({ model: 'beta_service', fell_back_from: ['alpha4_service'] });
    expect(await attempts()).toBeGreaterThan(before);
  });

  it('a stream falls back before its first byte', async () => {
    clock += 31_000; // cooldown over: alpha4 is tried (and fails) again
    const res = await chat(agent, { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-agent-model')).toBe('beta_service');
    expect(sseEvents(await res.text()).at(-1)?.data).toBe('[DONE]');
  });

  it('the OpenAI endpoint falls back too and names the model that answered', async () => {
    const res = await agentPost(`${agent.url}/v1/chat/completions`, {
      model: 'alpha4_service',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 8,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe('beta_service');
  });
});

describe('a slow primary', () => {
  let hole: Awaited<ReturnType<typeof blackHole>>;
  let agent: AgentTestServer;
  beforeAll(async () => {
    hole = await blackHole();
    agent = await startAgent({
      AGENT_ALPHA4_URL: hole.url,
      AGENT_ALPHA4_MODEL: 'alpha-2-9b-it',
      AGENT_BETA3_URL: shared.url,
      AGENT_BETA_URL: shared.url,
      AGENT_LLM_TIMEOUT_MS: '400',
      AGENT_LLM_FIRST_BYTE_TIMEOUT_MS: '400',
      AGENT_LLM_COOLDOWN_MS: '0', // tried every time: each call proves the timeout
      AGENT_LLM_PROBE_MS: '600000',
    });
  });
  afterAll(async () => {
    await agent.close();
    await hole.close();
  });

  it('times out on the primary and answers from the fallback', async () => {
    const started = Date.now();
    const res = await chat(agent);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ model: 'beta_service', fell_back_from: ['alpha4_service'] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(
      await metric(agent, 'agent_upstream_requests_total', {
        upstream: 'alpha4_service',
        outcome: 'timeout',
      }),
    ).toBe(1);
  });

  it('a stream whose primary sends nothing falls back after the first-byte timeout', async () => {
    const res = await chat(agent, { stream: true });
    expect(res.headers.get('x-agent-model')).toBe('beta_service');
    expect(sseEvents(await res.text()).at(-1)?.data).toBe('[DONE]');
  });
});

describe('every upstream hangs', () => {
  let hole: Awaited<ReturnType<typeof blackHole>>;
  let agent: AgentTestServer;
  let deadline: AgentTestServer;
  beforeAll(async () => {
    hole = await blackHole();
    const env = {
      LLM_URL: hole.url,
      // Named, so no call waits on a /v1/models probe that never answers.
      AGENT_ALPHA4_MODEL: 'alpha-2-9b-it',
      AGENT_BETA_MODEL: 'alpha-2-9b-it',
      AGENT_BETA3_MODEL: 'alpha-2-9b-it',
      AGENT_LLM_RETRIES: '0',
      AGENT_LLM_PROBE_MS: '600000',
      AGENT_STATUS_TIMEOUT_MS: '200',
    };
    [agent, deadline] = await Promise.all([
      startAgent(
        { ...env, AGENT_LLM_TIMEOUT_MS: '300', AGENT_LLM_FIRST_BYTE_TIMEOUT_MS: '300' },
        { waitReady: false },
      ),
      // The agent's own deadline passes first: that is the one 504.
      startAgent({ ...env, AGENT_LLM_TIMEOUT_MS: '60000', REQUEST_TIMEOUT_MS: '500' }, { waitReady: false }),
    ]);
    agent.service.upstreams.readiness.setReady(); // as after an upstream answered once
    deadline.service.upstreams.readiness.setReady();
  });
  afterAll(async () => {
    await Promise.all([agent.close(), deadline.close()]);
    await hole.close();
  });

  it('answers 502 (spec: LLM sub-service timed out or failed), saying they timed out', async () => {
    const res = await chat(agent);
    expect(res.status).toBe(502);
    const body = (await res.json()) as { detail: string };
    expect(body.detail).toMatch(
      /^Every LLM upstream failed or timed out \(alpha4_service, beta_service, beta3_service\); last: The LLM upstream alpha4_service at http:\/\/127\.0\.0\.1:\d+ did not answer within 300 ms$/,
    );
    expect(
      await metric(agent, 'agent_upstream_requests_total', {
        upstream: 'alpha4_service',
        outcome: 'timeout',
      }),
    ).toBe(1);
  });

  it('a stream too, before its first byte', async () => {
    const res = await chat(agent, { stream: true });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/did not answer within 300 ms/);
  });

  it("answers 504 only when the request passes the agent's own deadline (REQUEST_TIMEOUT_MS)", async () => {
    const res = await chat(deadline);
    expect(res.status).toBe(504);
  });
});

describe('an upstream configured with a model name it does not serve (its 404)', () => {
  let agent: AgentTestServer;
  let allWrong: AgentTestServer;
  beforeAll(async () => {
    const env = { LLM_URL: shared.url, AGENT_LLM_PROBE_MS: '600000' };
    [agent, allWrong] = await Promise.all([
      startAgent({ ...env, AGENT_ALPHA4_MODEL: 'no-such-model' }),
      startAgent({
        ...env,
        AGENT_ALPHA4_MODEL: 'no-such-model',
        AGENT_BETA_MODEL: 'no-such-model',
        AGENT_BETA3_MODEL: 'no-such-model',
      }),
    ]);
  });
  afterAll(() => Promise.all([agent.close(), allWrong.close()]));

  it('is the configuration, not the client: the call falls back and answers', async () => {
    const res = await chat(agent);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ model: 'beta_service', fell_back_from: ['alpha4_service'] });
    expect(
      await metric(agent, 'agent_upstream_fallbacks_total', { from: 'alpha4_service', to: 'beta_service' }),
    ).toBe(1);
    const stream = await chat(agent, { stream: true });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('x-agent-model')).toBe('beta_service');
    expect(sseEvents(await stream.text()).at(-1)?.data).toBe('[DONE]');
  });

  it('answers 502 naming the 404 when every upstream refuses so', async () => {
    const res = await chat(allWrong);
    expect(res.status).toBe(502);
    expect(((await res.json()) as { detail: string }).detail).toMatch(
      /^Every LLM upstream failed \(alpha4_service, beta_service, beta3_service\); last: .*beta3_service.* answered 404: The model `no-such-model` does not exist/,
    );
    const sessions = (await (await agentGet(`${allWrong.url}/sessions`)).json()) as { total: number };
    expect(sessions.total).toBe(0);
  });
});

describe('every upstream down', () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    agent = await startAgent(
      {
        LLM_URL: `http://127.0.0.1:${await closedPort()}`,
        AGENT_LLM_RETRIES: '0',
        AGENT_LLM_PROBE_MS: '600000',
      },
      { waitReady: false },
    );
    await agent.service.upstreams.check();
  });
  afterAll(() => agent.close());

  it('is not ready until an upstream answers: /health 503 with the reason', async () => {
    const res = await fetch(`${agent.url}/health`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      status: 'unhealthy',
      reason: expect.stringMatching(/no LLM upstream/),
    });
    // A well-formed request waits for readiness; a malformed one is refused as such.
    expect((await chat(agent)).status).toBe(503);
    const tooLong = await chat(agent, { message: 'x'.repeat(agent.config.AGENT_MAX_MESSAGE_CHARS + 1) });
    expect(tooLong.status).toBe(400);
    const empty = await agentPost(`${agent.url}/run`, { message: '   ' });
    expect(empty.status).toBe(400);
  });

  it('answers 502 naming the upstreams once it was ready', async () => {
    agent.service.upstreams.readiness.setReady(); // as after an upstream answered once
    const res = await chat(agent);
    expect(res.status).toBe(502);
    const body = (await res.json()) as { detail: string };
    expect(body.detail).toMatch(/Every LLM upstream failed \(alpha4_service, beta_service, beta3_service\)/);
    expect(body.detail).toMatch(/ECONNREFUSED/);
    expect(await metric(agent, 'agent_upstream_exhausted_total')).toBe(1);
    // A shared URL that refused connections is not dialled again under the other names.
    expect(
      await metric(agent, 'agent_upstream_requests_total', { upstream: 'alpha4_service', outcome: 'error' }),
    ).toBe(1);
    expect(
      await metric(agent, 'agent_upstream_requests_total', { upstream: 'beta_service', outcome: 'error' }),
    ).toBe(0);
  });

  it('streams fail the same way, before any byte', async () => {
    const res = await chat(agent, { stream: true });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/json/);
  });
});

describe('a request the LLM refuses as invalid', () => {
  let agent: AgentTestServer;
  beforeAll(async () => {
    // The agent thinks the context is huge; the LLM (4096) refuses the prompt: 400, no fallback.
    agent = await startAgent({ LLM_URL: shared.url, AGENT_CONTEXT_TOKENS: '1000000' });
  });
  afterAll(() => agent.close());

  it("passes the LLM's 400 (over its context) on, without trying the other upstreams", async () => {
    const res = await chat(agent, { message: 'word '.repeat(5000) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(
      /alpha4_service.*answered 400: This model's maximum context length is \d+ tokens/,
    );
    expect(await metric(agent, 'agent_upstream_fallbacks_total')).toBe(0);
    // The client's request, not the upstream's fault: no cooldown; and no session was created.
    expect(await metric(agent, 'agent_upstream_cooldowns_total')).toBe(0);
    const sessions = await agentGet(`${agent.url}/sessions`);
    expect(sessions.status).toBe(200);
    expect(((await sessions.json()) as { total: number }).total).toBe(0);
  });

  it("on /v1/chat/completions: OpenAI's context_length_exceeded code, naming messages", async () => {
    const res = await agentPost(`${agent.url}/v1/chat/completions`, {
      messages: [{ role: 'user', content: 'word '.repeat(5000) }],
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; param: string; message: string } };
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(error.message).toMatch(/maximum context length is \d+ tokens/);
  });
});
