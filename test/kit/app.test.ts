import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { TokenStore, defineRoute, openSse } from '@clinicalsuite/kit';
import { type TestServer, deferred, ready, sleep, startTestServer, waitFor } from './helpers.js';

describe('SSE', () => {
  let srv: TestServer;
  let produced = 0;
  let stoppedBy: unknown;
  beforeAll(async () => {
    srv = await startTestServer({
      readiness: ready(),
      routes: [
        defineRoute({
          method: 'post',
          path: '/stream',
          summary: 'streams until told to stop',
          body: z.object({ count: z.number().int().optional() }),
          handler: async ({ req, res, body }) => {
            const sse = openSse(req, res, { heartbeatMs: 20 });
            for (let i = 0; body.count === undefined || i < body.count; i++) {
              if (sse.signal.aborted) {
                stoppedBy = sse.signal.reason;
                return;
              }
              produced += 1;
              await sse.send({ i, text: `line ${i}\nsecond line` });
              await sleep(15);
            }
            sse.done();
          },
        }),
      ],
    });
  });
  afterAll(() => srv.close());

  it('frames events, sends heartbeats and ends with data: [DONE]', async () => {
    const res = await fetch(`${srv.url}/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ count: 3 }),
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const text = await res.text();
    const events = text.split('\n\n').filter((e) => e.startsWith('data:'));
    expect(events.map((e) => e.replace(/^data: /, ''))).toEqual([
      JSON.stringify({ i: 0, text: 'line 0\nsecond line' }),
      JSON.stringify({ i: 1, text: 'line 1\nsecond line' }),
      JSON.stringify({ i: 2, text: 'line 2\nsecond line' }),
      '[DONE]',
    ]);
    expect(text).toContain(': keep-alive\n\n');
  });

  it('aborts the producer when the client disconnects', async () => {
    produced = 0;
    stoppedBy = undefined;
    const controller = new AbortController();
    const res = await fetch(`${srv.url}/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    controller.abort();
    await waitFor(() => stoppedBy !== undefined, 2000);
    expect(stoppedBy).toMatchObject({ status: 499 });
    const atStop = produced;
    await sleep(80);
    expect(produced).toBe(atStop);
    await waitFor(() => srv.kit.gate.running === 0);
  });
});

describe('metrics, docs, GPU status and logs', () => {
  let srv: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kit-app-'));
    const fake = join(dir, 'nvidia-smi');
    const fixture = readFileSync(new URL('../fixtures/nvidia-smi/l4-x2.txt', import.meta.url), 'utf8');
    writeFileSync(fake, `#!/bin/sh\ncat <<'OUT'\n${fixture.trimEnd()}\nOUT\n`);
    chmodSync(fake, 0o755);
    srv = await startTestServer(
      {
        readiness: ready(),
        gpuStatusPath: '/gpu_status',
        auth: { tokens: new TokenStore({ tokens: [{ token: 's3cret-token', scopes: [] }] }) },
        routes: [
          defineRoute({
            method: 'post',
            path: '/patients/:id/notes',
            summary: 'Write a note',
            tags: ['notes'],
            params: z.object({ id: z.string() }),
            body: z.object({
              prompt: z.string().describe('Patient note'),
              max_tokens: z.number().int().default(16),
            }),
            response: z.object({ chars: z.number() }),
            handler: ({ body, log }) => {
              log.info({ prompt: body.prompt, nested: { messages: [body.prompt] } }, 'note received');
              return { chars: body.prompt.length };
            },
          }),
          defineRoute({
            method: 'post',
            path: '/v1/echo',
            summary: 'Echo (an API whose spec answers a schema error with 400)',
            body: z.object({ model: z.string() }),
            validationStatus: 400,
            handler: ({ body }) => ({ model: body.model }),
          }),
        ],
      },
      { NVIDIA_SMI_PATH: fake },
    );
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const auth = { authorization: 'Bearer s3cret-token', 'content-type': 'application/json' };

  it('shows the counters moving by route template and status', async () => {
    const metricLine = async (pattern: RegExp) => {
      const text = await (await fetch(`${srv.url}/metrics`)).text();
      return Number(pattern.exec(text)?.[1] ?? 0);
    };
    const ok =
      /http_requests_total\{method="POST",route="\/patients\/:id\/notes",status="200",service="test"\} (\d+)/;
    const before = await metricLine(ok);
    for (const id of ['1', '2']) {
      const res = await fetch(`${srv.url}/patients/${id}/notes`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ prompt: 'chest pain' }),
      });
      expect(res.status).toBe(200);
    }
    await fetch(`${srv.url}/patients/3/notes`, { method: 'POST', headers: auth, body: '{}' });
    await fetch(`${srv.url}/does-not-exist/123`);
    await waitFor(async () => (await metricLine(ok)) === before + 2);
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    expect(text).toMatch(
      /http_requests_total\{method="POST",route="\/patients\/:id\/notes",status="422",service="test"\} 1/,
    );
    expect(text).toMatch(
      /http_requests_total\{method="GET",route="unmatched",status="404",service="test"\} 1/,
    );
    expect(text).toMatch(
      /http_request_duration_seconds_count\{(?=[^}]*method="POST")(?=[^}]*route="\/patients\/:id\/notes")(?=[^}]*status="200")[^}]*\} 2\n/,
    );
    expect(text).not.toMatch(/patients\/1/); // never the raw path
    for (const name of [
      'clinicalsuite_requests_running',
      'clinicalsuite_requests_waiting',
      'clinicalsuite_concurrency_limit',
    ]) {
      expect(text).toContain(`# TYPE ${name} gauge`);
    }
    expect(text).toMatch(/clinicalsuite_concurrency_limit\{service="test"\} 2/);
    expect(text).toMatch(/clinicalsuite_ready\{service="test"\} 1/);
    expect(text).toMatch(/clinicalsuite_gpu_available\{service="test"\} 1/);
    expect(text).toMatch(/clinicalsuite_gpu_memory_total_bytes\{[^}]*gpu="1"[^}]*\} 24\d{9}/);
  });

  it('serves the GPU summary from nvidia-smi', async () => {
    const res = await fetch(`${srv.url}/gpu_status`, { headers: auth });
    const body = (await res.json()) as {
      available: boolean;
      device: string;
      gpu_name: string;
      gpus: unknown[];
    };
    expect(body).toMatchObject({ available: true, device: 'cuda', gpu_name: 'NVIDIA L4' });
    expect(body.gpus).toHaveLength(2);
  });

  it('answers a schema error with the route’s validation status and the same field list', async () => {
    const res = await fetch(`${srv.url}/v1/echo`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({}),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; param?: string } };
    expect(body.error).toMatchObject({ code: 'validation_error', param: 'model' });
    const ok = await fetch(`${srv.url}/v1/echo`, { method: 'POST', headers: auth, body: '{"model":"m"}' });
    expect([ok.status, await ok.json()]).toEqual([200, { model: 'm' }]);
  });

  it('serves OpenAPI 3.1 generated from the zod schemas', async () => {
    const doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<
        string,
        Record<string, { requestBody?: unknown; parameters: unknown[]; responses: Record<string, unknown> }>
      >;
    };
    expect(doc.openapi).toBe('3.1.0');
    const op = doc.paths['/patients/{id}/notes']?.post;
    expect(op?.parameters).toEqual([{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }]);
    expect(op?.requestBody).toMatchObject({
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: { prompt: { type: 'string', description: 'Patient note' } },
            required: ['prompt'],
          },
        },
      },
    });
    expect(Object.keys(op?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '401', '422', '429', '503', '504']),
    );
    // A route whose spec says 400 documents 400 for a schema error, and no 422.
    const echo = doc.paths['/v1/echo']?.post;
    expect(Object.keys(echo?.responses ?? {})).toContain('400');
    expect(Object.keys(echo?.responses ?? {})).not.toContain('422');
    expect(doc.paths['/gpu_status']?.get).toBeDefined();
    expect(doc.paths['/livez']?.get).toMatchObject({ security: [] });
  });

  it('serves an offline /docs page whose assets come from the server itself', async () => {
    const page = await (await fetch(`${srv.url}/docs`)).text();
    expect(page).toContain('<div id="swagger-ui">');
    const srcs = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(srcs.every((s) => s.startsWith('/docs/'))).toBe(true);
    for (const src of srcs) {
      const res = await fetch(`${srv.url}${src}`);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
  });

  it('logs requests without tokens, query values or clinical text', async () => {
    await fetch(`${srv.url}/patients/9/notes?token=leaky-query-token`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ prompt: 'Bệnh nhân đau ngực trái' }),
    });
    await waitFor(() =>
      srv.logs.some((l) => (l.req as { url?: string } | undefined)?.url?.includes('token=')),
    );
    const all = JSON.stringify(srv.logs);
    expect(all).not.toContain('đau ngực');
    expect(all).not.toContain('chest pain');
    expect(all).not.toContain('s3cret-token');
    expect(all).not.toContain('leaky-query-token');
    const completed = srv.logs.find(
      (l) => (l.req as { url?: string } | undefined)?.url === '/patients/:id/notes?token=…',
    );
    expect(completed).toMatchObject({ route: '/patients/:id/notes', res: { statusCode: 200 } });
    expect(srv.logs.find((l) => l.msg === 'note received')).toMatchObject({ prompt: '[redacted]' });
  });

  it('logs the route template, not the path: a name or id in the path stays out of the logs', async () => {
    const name = 'Nguyễn Văn Bình';
    const before = srv.logs.length;
    const matched = await fetch(`${srv.url}/patients/${encodeURIComponent(name)}/notes?q=x`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ prompt: 'x' }),
    });
    expect(matched.status).toBe(200);
    const unmatched = await fetch(`${srv.url}/patient/${encodeURIComponent(name)}`, { headers: auth });
    expect(unmatched.status).toBe(404);
    await waitFor(() => srv.logs.slice(before).filter((l) => 'res' in l).length >= 2);
    const lines = srv.logs.slice(before);
    const logged = JSON.stringify(lines);
    for (const leak of [name, encodeURIComponent(name), 'Nguy', 'B%C3%ACnh'])
      expect(logged).not.toContain(leak);
    const completions = lines.filter((l) => 'res' in l);
    expect(completions.map((l) => (l.req as { url: string }).url)).toEqual([
      '/patients/:id/notes?q=…',
      'unmatched',
    ]);
    expect(completions.map((l) => l.route)).toEqual(['/patients/:id/notes', 'unmatched']);
  });
});

describe('request log levels', () => {
  let srv: TestServer | undefined;
  afterEach(async () => srv?.close());

  it('logs probes and scrapes at debug, a 503 at warn, a failure at error, each with its route', async () => {
    const readiness = ready();
    srv = await startTestServer({
      readiness,
      routes: [
        defineRoute({
          method: 'get',
          path: '/items/:id',
          summary: 'item',
          handler: ({ req }) => ({ id: req.params['id'] }),
        }),
        defineRoute({ method: 'post', path: '/work', summary: 'gated', handler: () => ({ ok: true }) }),
        defineRoute({
          method: 'get',
          path: '/broken',
          summary: 'fails',
          handler: () => {
            throw new Error('engine exploded');
          },
        }),
      ],
    });
    const completion = (url: string): Record<string, unknown> | undefined =>
      srv?.logs.find((l) => (l.req as { url?: string } | undefined)?.url === url && 'res' in l);
    await fetch(`${srv.url}/livez`);
    await fetch(`${srv.url}/metrics`);
    await fetch(`${srv.url}/items/7`);
    await fetch(`${srv.url}/broken`);
    readiness.setNotReady('loading the model');
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${srv.url}/work`, { method: 'POST' })).status).toBe(503);
    await waitFor(() => completion('/work') !== undefined && completion('/broken') !== undefined);
    expect(completion('/livez')).toMatchObject({ level: 'debug', route: '/livez' });
    expect(completion('/metrics')).toMatchObject({ level: 'debug', route: '/metrics' });
    expect(completion('/readyz')).toMatchObject({ level: 'debug', route: '/readyz' });
    expect(completion('/items/:id')).toMatchObject({ level: 'info', route: '/items/:id' });
    expect(completion('/broken')).toMatchObject({ level: 'error', route: '/broken' });
    expect(completion('/work')).toMatchObject({ level: 'warn', route: '/work' });
  });
});

describe('graceful shutdown', () => {
  let srv: TestServer | undefined;
  afterEach(async () => srv?.close());

  it('stops accepting, drains the request in flight, then closes', async () => {
    const hold = deferred();
    let finished = false;
    srv = await startTestServer({
      readiness: ready(),
      routes: [
        defineRoute({
          method: 'post',
          path: '/work',
          summary: 'held',
          handler: async () => {
            await hold.promise;
            finished = true;
            return { ok: true };
          },
        }),
      ],
    });
    const inFlight = fetch(`${srv.url}/work`, { method: 'POST' });
    await waitFor(() => srv!.kit.gate.running === 1);
    const stopped = srv.server.shutdown('test');
    await sleep(50);
    expect(srv.kit.readiness.ready).toBe(false);
    await expect(fetch(`${srv.url}/livez`)).rejects.toThrow();
    hold.resolve();
    const res = await inFlight;
    expect(res.status).toBe(200);
    await stopped;
    expect(finished).toBe(true);
  });
});

describe('shutdown at the end of the grace period', () => {
  let srv: TestServer | undefined;
  afterEach(async () => srv?.close());

  it('answers a request still in work 503 with Retry-After in the route shape, and a stream an error event, before closing', async () => {
    const never = new Promise<never>(() => {});
    srv = await startTestServer(
      {
        readiness: ready(),
        routes: [
          // Ignores its signal: nothing but the kit can answer it.
          defineRoute({ method: 'post', path: '/stuck', summary: 'stuck', handler: async () => never }),
          // Stops when aborted, throwing the abort reason.
          defineRoute({
            method: 'post',
            path: '/v1/work',
            summary: 'OpenAI-shaped',
            handler: async ({ signal }) =>
              new Promise((_resolve, reject) =>
                signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
              ),
          }),
          defineRoute({
            method: 'get',
            path: '/stream',
            summary: 'streams',
            handler: async ({ req, res }) => {
              const sse = openSse(req, res, { heartbeatMs: 10_000 });
              await sse.send({ i: 0 });
              await never;
            },
          }),
        ],
      },
      { SHUTDOWN_GRACE_MS: '300', MAX_CONCURRENCY: '4' },
    );
    const stuck = fetch(`${srv.url}/stuck`, { method: 'POST' });
    const work = fetch(`${srv.url}/v1/work`, { method: 'POST' });
    const stream = await fetch(`${srv.url}/stream`);
    expect(stream.status).toBe(200);
    await waitFor(() => srv!.kit.live.size === 3);
    const stopped = srv.server.shutdown('test');

    const a = await stuck;
    expect(a.status).toBe(503);
    expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await a.json()).toEqual({ detail: 'The service is shutting down' });

    const b = await work;
    expect(b.status).toBe(503);
    expect(b.headers.get('retry-after')).not.toBeNull();
    expect(await b.json()).toMatchObject({
      error: { message: 'The service is shutting down', code: 'service_unavailable' },
    });

    const text = await stream.text();
    expect(text).toContain('data: {"i":0}');
    expect(text).toMatch(/event: error\ndata: .*The service is shutting down/);
    await stopped;
  });
});
