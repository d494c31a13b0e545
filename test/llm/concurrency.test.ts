import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { auth, post, startLlm, TOKEN, waitFor, type LlmTestServer } from './helpers.js';

// The spec's limit of 3 in work: one context, one sequence per slot, decoded in shared batches.
// Queue bound 1 here, so the 5th concurrent request is refused.

const MODEL = 'alpha-2-9b-it';
let srv: LlmTestServer;
let client: OpenAI;

beforeAll(async () => {
  srv = await startLlm({ MAX_CONCURRENCY: '3', QUEUE_SIZE: '1' });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
});
afterAll(() => srv.close());

interface Timed {
  firstToken: number;
  end: number;
  text: string;
}

/** A streamed request; records when its first content arrived and when it ended. */
async function timedStream(content: string, maxTokens: number, signal?: AbortSignal): Promise<Timed> {
  const stream = await client.chat.completions.create(
    {
      model: MODEL,
      messages: [{ role: 'user', content }],
      max_completion_tokens: maxTokens,
      temperature: 0,
      stream: true,
    },
    signal === undefined ? {} : { signal },
  );
  let firstToken = Number.NaN;
  let text = '';
  for await (const chunk of stream) {
    const piece = chunk.choices[0]?.delta.content ?? '';
    if (piece !== '' && Number.isNaN(firstToken)) firstToken = performance.now();
    text += piece;
  }
  return { firstToken, end: performance.now(), text };
}

const gate = () => srv.service.kit.gate;

describe('concurrency', () => {
  it('runs 3 requests together: each one’s first token arrives before any of them finishes', async () => {
    const results = await Promise.all([
      timedStream('first patient', 600),
      timedStream('second patient', 600),
      timedStream('third patient', 600),
    ]);
    const lastFirstToken = Math.max(...results.map((r) => r.firstToken));
    const firstEnd = Math.min(...results.map((r) => r.end));
    expect(lastFirstToken).toBeLessThan(firstEnd);
    // Together they give the answers each gives alone (batching does not change greedy output).
    const alone = await timedStream('second patient', 600);
    expect(results[1].text).toBe(alone.text);
  });

  it('makes a 4th request wait for a slot, refuses a 5th with 429, and serves the 4th when a slot frees', async () => {
    const running = [timedStream('a', 1000), timedStream('b', 1000), timedStream('c', 1000)];
    await waitFor(() => gate().running === 3);
    const fourth = timedStream('d', 20);
    await waitFor(() => gate().waiting === 1);
    const status = (await (await fetch(`${srv.url}/status`, { headers: auth })).json()) as {
      slots: Record<string, number>;
    };
    expect(status.slots).toEqual({ total: 3, in_use: 3, waiting: 1, queue_capacity: 1 });

    const error = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'e' }], max_completion_tokens: 5 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toMatch(/^\d+$/);

    const done = await Promise.all(running);
    const served = await fourth;
    expect(served.firstToken).toBeGreaterThanOrEqual(Math.min(...done.map((r) => r.end)) - 50);
    expect(served.text.length).toBeGreaterThan(0);
  });

  it('frees the slot at once when a client disconnects, and stops its generation', async () => {
    const controllers = [new AbortController(), new AbortController(), new AbortController()];
    const streams = controllers.map((c, i) =>
      timedStream(`long ${i}`, 1500, c.signal).catch((e: unknown) => e),
    );
    await waitFor(() => gate().running === 3);
    await waitFor(() => srv.service.host.engine!.contextTokensInUse() > 100);
    const abortedAt = performance.now();
    controllers[0]!.abort();
    await waitFor(() => gate().running === 2, 500);
    const next = await timedStream('next', 5);
    // The slot passed on at once: the new request finished while the other two still generate.
    expect(gate().running).toBe(2);
    expect(next.end - abortedAt).toBeLessThan(1000);
    for (const c of controllers.slice(1)) c.abort();
    await Promise.all(streams);
    await waitFor(() => gate().running === 0);
    // Every generation stopped (not ran on to max_tokens for nobody).
    await waitFor(async () =>
      /llm_request_aborted_total\{reason="client_closed",service="llm"\} 3\n/.test(
        await (await fetch(`${srv.url}/metrics`)).text(),
      ),
    );
    await waitFor(() => srv.service.host.engine!.contextTokensInUse() === 0);
  });
});

describe('raw HTTP', () => {
  it('ends a stream with data: [DONE] and no usage chunk without include_usage', async () => {
    const res = await post(`${srv.url}/v1/chat/completions`, {
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
      temperature: 0,
      stream: true,
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as Record<string, unknown>);
    expect(chunks.every((c) => !('usage' in c))).toBe(true);
  });
});
