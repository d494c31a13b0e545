import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { BadGatewayError, defineRoute } from '@clinicalsuite/kit';
import { ready, startTestServer, type TestServer } from './helpers.js';

const chatBody = z.object({
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() })).min(1),
  max_tokens: z.number().int().min(1).max(4096).optional(),
});

const routes = [
  defineRoute({
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'openai-shaped',
    body: chatBody,
    handler: ({ body }) => ({ count: body.messages.length }),
  }),
  defineRoute({
    method: 'post',
    path: '/chat',
    summary: 'detail-shaped',
    body: chatBody,
    handler: ({ body }) => ({ count: body.messages.length }),
  }),
  defineRoute({
    method: 'get',
    path: '/items/:id',
    summary: 'params and query',
    params: z.object({ id: z.string().regex(/^\d+$/) }),
    query: z.object({ limit: z.coerce.number().int().max(10).default(5) }),
    handler: ({ params, query }) => ({ id: params.id, limit: query.limit }),
  }),
  defineRoute({
    method: 'get',
    path: '/boom',
    summary: 'throws',
    handler: () => {
      throw new Error('secret internals at /srv/app.js:12');
    },
  }),
  defineRoute({
    method: 'get',
    path: '/upstream',
    summary: 'upstream failure',
    handler: () => {
      throw new BadGatewayError('LLM upstream failed');
    },
  }),
];

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

describe('validation and the error catalogue over a real socket', () => {
  let srv: TestServer;
  let envelope: TestServer;
  beforeAll(async () => {
    // Ready: a service that is not refuses before reading a body (503), so no body error shows.
    srv = await startTestServer({ routes, readiness: ready() }, { BODY_LIMIT: '2kb' });
    envelope = await startTestServer({ routes, errorShape: 'envelope', readiness: ready() });
  });
  afterAll(async () => {
    await srv.close();
    await envelope.close();
  });

  it('answers 422 with {detail:[{loc,msg,type}]} listing every failing field', async () => {
    const res = await post(
      `${srv.url}/chat`,
      JSON.stringify({ messages: [{ role: 'robot' }], max_tokens: 0 }),
    );
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
    const locs = body.detail.map((d) => d.loc);
    expect(locs).toEqual(
      expect.arrayContaining([
        ['body', 'messages', 0, 'role'],
        ['body', 'messages', 0, 'content'],
        ['body', 'max_tokens'],
      ]),
    );
    expect(body.detail.every((d) => d.msg.length > 0 && d.type.length > 0)).toBe(true);
  });

  it('answers OpenAI-shaped errors on /v1/*', async () => {
    const res = await post(`${srv.url}/v1/chat/completions`, JSON.stringify({ messages: [] }));
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toEqual({
      message: expect.stringContaining('messages'),
      type: 'invalid_request_error',
      param: 'messages',
      code: 'validation_error',
    });
  });

  it('answers the face envelope when the service uses it', async () => {
    const res = await post(`${envelope.url}/chat`, JSON.stringify({}));
    expect(res.status).toBe(422);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ success: false, message: expect.stringContaining('messages') });
    expect(body.errors).toEqual([expect.objectContaining({ loc: ['body', 'messages'] })]);
    const missing = await fetch(`${envelope.url}/nowhere`);
    expect(await missing.json()).toEqual({ success: false, message: 'No route for GET /nowhere' });
  });

  it('validates path and query parameters', async () => {
    const ok = await fetch(`${srv.url}/items/42?limit=3`);
    expect(await ok.json()).toEqual({ id: '42', limit: 3 });
    const bad = await fetch(`${srv.url}/items/abc?limit=50`);
    expect(bad.status).toBe(422);
    const body = (await bad.json()) as { detail: { loc: unknown[] }[] };
    expect(body.detail.map((d) => d.loc)).toEqual(
      expect.arrayContaining([
        ['path', 'id'],
        ['query', 'limit'],
      ]),
    );
  });

  it('answers 413 past the body limit, in each shape', async () => {
    const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(4096) }] });
    const res = await post(`${srv.url}/chat`, big);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ detail: expect.stringContaining('exceeds the limit') });
    const v1 = await post(`${srv.url}/v1/chat/completions`, big);
    expect(v1.status).toBe(413);
    expect(((await v1.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });

  it('answers 413, not 500, to a form with more fields than the parser takes', async () => {
    const form = Array.from({ length: 1100 }, (_, i) => `f${i}=1`).join('&');
    const res = await fetch(`${envelope.url}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      success: false,
      message: expect.stringContaining('more form fields'),
    });
  });

  it('answers 400 to malformed JSON', async () => {
    const res = await post(`${srv.url}/chat`, '{"messages": [');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ detail: 'Request body is not valid JSON' });
  });

  it('answers 404 as JSON for unknown routes and methods', async () => {
    const res = await fetch(`${srv.url}/no/such/route`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual({ detail: 'No route for GET /no/such/route' });
    const v1 = await fetch(`${srv.url}/v1/nothing`, { method: 'DELETE' });
    expect(((await v1.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
  });

  it('never sends a stack trace: an unexpected error is a plain 500', async () => {
    const res = await fetch(`${srv.url}/boom`);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ detail: 'Internal server error' });
    expect(text).not.toMatch(/secret internals|app\.js|\bat\b/);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    // ...but the log keeps it, tied to the request id.
    const logged = srv.logs.find((l) => l.msg === 'request failed');
    expect(logged?.reqId).toBe(res.headers.get('x-request-id'));
  });

  it('maps catalogue errors to their status', async () => {
    const res = await fetch(`${srv.url}/upstream`);
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ detail: 'LLM upstream failed' });
  });

  it('keeps a well-formed incoming request id and replaces a bad one', async () => {
    const good = await fetch(`${srv.url}/livez`, { headers: { 'x-request-id': 'abc-123' } });
    expect(good.headers.get('x-request-id')).toBe('abc-123');
    const bad = await fetch(`${srv.url}/livez`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(bad.headers.get('x-request-id')).not.toBe('a b<script>');
  });
});
