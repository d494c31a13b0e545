import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { BadGatewayError, GatewayTimeoutError } from '@clinicalsuite/kit';
import { LlmClient, type StreamEvent } from '@clinicalsuite/kit/llm';

/**
 * The kit's LLM client on the outbound HttpClient, against a hand-written OpenAI-compatible server:
 * its stream read by the shared event-stream parser, its retries, its deadline and its metrics.
 */

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function llm(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const chunk = (content: string, extra: object = {}): string =>
  `data: ${JSON.stringify({ model: 'm1', choices: [{ delta: { content } }], ...extra })}`;

const request = {
  model: 'x',
  messages: [{ role: 'user' as const, content: 'hi' }],
  temperature: 0,
  maxTokens: 5,
};

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe('LlmClient', () => {
  it('streams deltas and the end, CRLF framing and a [DONE] closing without its blank line', async () => {
    const url = await llm((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`: hello\r\n\r\n${chunk('Xin ')}\r\n\r\n${chunk('chào')}\r\n\r\n`);
      res.end(
        `${JSON.stringify({ choices: [{ delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 2 } }).replace(/^/, 'data: ')}\n\ndata: [DONE]\n`,
      );
    });
    const client = new LlmClient({ baseUrl: url, timeoutMs: 5000, retries: 0, backoffMs: 10 });
    expect(await collect(client.stream(request, new AbortController().signal))).toEqual([
      { type: 'delta', text: 'Xin ' },
      { type: 'delta', text: 'chào' },
      { type: 'end', model: 'm1', finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 2 } },
    ]);
  });

  it('fails a stream that ends without [DONE], and one that stalls past the deadline', async () => {
    const ends = await llm((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${chunk('a')}\n\n`);
    });
    const stalls = await llm((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`${chunk('a')}\n\n`);
    });
    const signal = new AbortController().signal;
    const ended = new LlmClient({ baseUrl: ends, timeoutMs: 300, retries: 0, backoffMs: 10 });
    await expect(collect(ended.stream(request, signal))).rejects.toEqual(
      new BadGatewayError(`The LLM at ${ends.replace(/\/v1$/, '')} ended the stream without [DONE]`),
    );
    const stalled = new LlmClient({ baseUrl: stalls, timeoutMs: 300, retries: 0, backoffMs: 10 });
    await expect(collect(stalled.stream(request, signal))).rejects.toEqual(
      new GatewayTimeoutError(`The LLM at ${stalls.replace(/\/v1$/, '')} did not answer within 300 ms`),
    );
  });

  it('retries a 502 and a refused connection as safe, counting both', async () => {
    let calls = 0;
    const url = await llm((_req, res) => {
      calls += 1;
      res.writeHead(calls === 1 ? 502 : 200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          calls === 1
            ? { error: { message: 'warming up' } }
            : { model: 'm1', choices: [{ message: { content: 'ok' }, finish_reason: 'stop' }] },
        ),
      );
    });
    const reasons: string[] = [];
    const registry = new Registry();
    const client = new LlmClient({
      baseUrl: url,
      timeoutMs: 5000,
      retries: 2,
      backoffMs: 10,
      onRetry: (r) => reasons.push(r),
      metrics: registry,
    });
    const result = await client.complete(request, new AbortController().signal);
    expect(result).toMatchObject({ text: 'ok', model: 'm1', attempts: 2 });
    expect(reasons).toEqual(['status_502']);
    const text = await registry.metrics();
    expect(text).toContain('http_client_requests_total{upstream="llm",method="POST",outcome="5xx"} 1');
    expect(text).toContain('http_client_requests_total{upstream="llm",method="POST",outcome="2xx"} 1');
  });

  it('answers 504 when the LLM says nothing within timeoutMs', async () => {
    const url = await llm(() => undefined);
    const client = new LlmClient({ baseUrl: url, timeoutMs: 150, retries: 1, backoffMs: 10 });
    await expect(client.complete(request, new AbortController().signal)).rejects.toEqual(
      new GatewayTimeoutError(`The LLM at ${url.replace(/\/v1$/, '')} did not answer within 150 ms`),
    );
  });
});
