import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import {
  BadGatewayError,
  GatewayTimeoutError,
  HttpClient,
  NotFoundError,
  ServiceUnavailableError,
  parseEventStream,
  type HttpClientOptions,
  type SseEvent,
} from '@clinicalsuite/kit';
import { freePort } from './helpers.js';

/**
 * The kit's outbound client (services/kit/src/http-client) against real HTTP servers on loopback:
 * its deadlines and the caller's abort, told apart; retries only where safe, Retry-After honoured
 * up to its cap; the failure mapping onto the error catalogue; metrics per upstream; and the
 * event-stream parser on hand-cut bodies and over the wire.
 */

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Upstream {
  readonly url: string;
  /** Requests received so far (method and path). */
  readonly seen: string[];
  /** Requests whose connection the client closed before the response ended. */
  readonly closedEarly: string[];
  readonly server: Server;
}

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

async function upstream(handler: Handler): Promise<Upstream> {
  const seen: string[] = [];
  const closedEarly: string[] = [];
  const server = createServer((req, res) => {
    const what = `${req.method} ${req.url}`;
    seen.push(what);
    res.once('close', () => {
      if (!res.writableFinished) closedEarly.push(what);
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, closedEarly, server };
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function client(options: Partial<HttpClientOptions> & { baseUrl: string }): HttpClient {
  return new HttpClient({ name: 'demo', timeoutMs: 5000, ...options });
}

async function until(check: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function metricLines(registry: Registry, name: string): Promise<string[]> {
  return (await registry.metrics()).split('\n').filter((l) => l.startsWith(name));
}

describe('calls', () => {
  it('sends JSON with the bearer token under the base path and reads the answer', async () => {
    let got: Record<string, string | undefined> = {};
    const up = await upstream((req, res, body) => {
      got = {
        auth: req.headers.authorization,
        type: req.headers['content-type'],
        accept: req.headers.accept,
        body,
      };
      json(res, 200, { echo: JSON.parse(body) as unknown });
    });
    const c = client({ baseUrl: `${up.url}/base//`, token: 'tok-123' });
    expect(await c.json({ method: 'POST', path: '/things?x=1', json: { a: 1 } })).toEqual({ echo: { a: 1 } });
    expect(up.seen).toEqual(['POST /base/things?x=1']);
    expect(got).toEqual({
      auth: 'Bearer tok-123',
      type: 'application/json',
      accept: 'application/json',
      body: '{"a":1}',
    });
  });

  it('takes a user:token@ part of the URL as the bearer token and keeps it out of its URL', async () => {
    let auth: string | undefined;
    const up = await upstream((req, res) => {
      auth = req.headers.authorization;
      json(res, 200, {});
    });
    const c = client({ baseUrl: up.url.replace('//', '//agent:s%40cret@') });
    await c.request({ path: '/' });
    expect(auth).toBe('Bearer s@cret');
    expect(c.baseUrl).toBe(up.url);
    expect(c.label).toBe(`demo at ${up.url}`);
  });

  it('asks a token provider on every attempt', async () => {
    const auths: (string | undefined)[] = [];
    const up = await upstream((req, res) => {
      auths.push(req.headers.authorization);
      json(res, 200, {});
    });
    let n = 0;
    const c = client({ baseUrl: up.url, token: () => `t${++n}` });
    await c.request({ path: '/' });
    await c.request({ path: '/' });
    expect(auths).toEqual(['Bearer t1', 'Bearer t2']);
  });

  it('sends a FormData as multipart with its boundary', async () => {
    let got = '';
    let type = '';
    const up = await upstream((req, res, body) => {
      got = body;
      type = req.headers['content-type'] ?? '';
      json(res, 200, {});
    });
    const form = new FormData();
    form.append('language', 'vi');
    form.append('file', new Blob(['abc'], { type: 'audio/wav' }), 'a.wav');
    await client({ baseUrl: up.url }).request({ method: 'POST', path: '/upload', body: form });
    expect(type).toMatch(/^multipart\/form-data; boundary=/);
    expect(got).toContain('name="language"');
    expect(got).toContain('filename="a.wav"');
  });

  it('returns any status from request() and maps a non-2xx in json()', async () => {
    const up = await upstream((_req, res) => json(res, 404, { detail: 'no such thing' }));
    const c = client({
      baseUrl: up.url,
      failures: {
        status: (f) => (f.status === 404 ? new NotFoundError(`demo: ${f.detail}`) : new Error('x')),
      },
    });
    expect(await c.request({ path: '/x' })).toMatchObject({ status: 404, ok: false, attempts: 1 });
    await expect(c.json({ path: '/x' })).rejects.toMatchObject({
      status: 404,
      message: 'demo: no such thing',
    });
  });

  it('says a 2xx that is not JSON is not', async () => {
    const up = await upstream((_req, res) => res.end('<html>'));
    await expect(client({ baseUrl: up.url, label: 'The demo' }).json({ path: '/p' })).rejects.toEqual(
      new BadGatewayError('The demo answered /p with something other than JSON'),
    );
  });
});

describe('deadlines and aborts', () => {
  it('times out a call that gets no answer: 504 naming the time, the connection closed', async () => {
    const up = await upstream(() => undefined);
    const registry = new Registry();
    const c = client({ baseUrl: up.url, label: 'The demo', timeoutMs: 150, metrics: registry });
    const started = Date.now();
    const error = await c.request({ path: '/slow' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayTimeoutError);
    expect((error as Error).message).toBe('The demo did not answer within 150 ms');
    expect(Date.now() - started).toBeLessThan(2000);
    await until(() => up.closedEarly.length === 1);
    expect(await metricLines(registry, 'http_client_requests_total')).toEqual([
      'http_client_requests_total{upstream="demo",method="GET",outcome="timeout"} 1',
    ]);
  });

  it('a per-call timeout overrides the client default, and also bounds the body', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('part');
    });
    const c = client({ baseUrl: up.url, timeoutMs: 60_000 });
    const res = await c.send({ path: '/', timeoutMs: 200 });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toBeInstanceOf(GatewayTimeoutError);
    await until(() => up.closedEarly.length === 1);
  });

  it("throws the caller's abort reason as it is, unmapped, and closes the upstream's connection", async () => {
    const up = await upstream(() => undefined);
    const registry = new Registry();
    const c = client({ baseUrl: up.url, timeoutMs: 5000, metrics: registry });
    const controller = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 100);
    await expect(c.request({ path: '/', signal: controller.signal })).rejects.toBe(reason);
    await until(() => up.closedEarly.length === 1);
    expect(await metricLines(registry, 'http_client_requests_total')).toEqual([
      'http_client_requests_total{upstream="demo",method="GET",outcome="aborted"} 1',
    ]);
  });

  it('tells an abort while the body streams from a timeout', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
    });
    const c = client({ baseUrl: up.url, timeoutMs: 5000 });
    const controller = new AbortController();
    const res = await c.send({ path: '/', signal: controller.signal });
    const events = res.events();
    expect((await events.next()).value).toEqual({ event: 'message', data: 'one', id: '' });
    const reason = new Error('deadline of the route');
    controller.abort(reason);
    await expect(events.next()).rejects.toBe(reason);
    await until(() => up.closedEarly.length === 1);
  });

  it('never sends a call whose caller already gave up', async () => {
    const up = await upstream((_req, res) => json(res, 200, {}));
    const controller = new AbortController();
    const reason = new Error('gone');
    controller.abort(reason);
    await expect(client({ baseUrl: up.url }).request({ path: '/', signal: controller.signal })).rejects.toBe(
      reason,
    );
    expect(up.seen).toEqual([]);
  });

  it('re-arms the deadline as an idle deadline between events', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const timer = setInterval(() => {
        n += 1;
        res.write(`data: ${n}\n\n`);
        if (n === 4) clearInterval(timer);
      }, 120);
      res.once('close', () => clearInterval(timer));
    });
    // 300 ms in all would not do (four events 120 ms apart); 300 ms between events does, until they stop.
    const res = await client({ baseUrl: up.url }).send({ path: '/', timeoutMs: 300 });
    const seen: string[] = [];
    const events = res.events();
    const error = await (async () => {
      for (;;) {
        res.deadline.arm(300);
        const next = await events.next();
        res.deadline.pause();
        if (next.done === true) return undefined;
        seen.push(next.value.data);
      }
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['1', '2', '3', '4']);
    expect(error).toBeInstanceOf(GatewayTimeoutError);
    expect((error as Error).message).toContain('did not answer within 300 ms');
  });
});

describe('retries', () => {
  it('retries a refused connection for any method (the request never left), then maps it', async () => {
    const port = await freePort();
    const reasons: string[] = [];
    const registry = new Registry();
    const c = client({
      baseUrl: `http://127.0.0.1:${port}`,
      label: 'The demo',
      retry: { retries: 2, backoffMs: 10, onRetry: (r) => reasons.push(r) },
      metrics: registry,
    });
    const error = await c.request({ method: 'POST', path: '/', json: {} }).catch((e: unknown) => e);
    expect(error).toEqual(new ServiceUnavailableError('The demo is unreachable (ECONNREFUSED)'));
    expect(reasons).toEqual(['connection', 'connection']);
    expect(await metricLines(registry, 'http_client_retries_total')).toEqual([
      'http_client_retries_total{upstream="demo",method="POST",reason="connection"} 2',
    ]);
    expect(await metricLines(registry, 'http_client_requests_total')).toEqual([
      'http_client_requests_total{upstream="demo",method="POST",outcome="unreachable"} 3',
    ]);
  });

  it('retries a reset connection for GET but never a POST the upstream may have acted on', async () => {
    let resets = 1;
    const up = await upstream((req, res) => {
      if (resets > 0) {
        resets -= 1;
        req.socket.destroy();
        return;
      }
      json(res, 200, { ok: true });
    });
    const c = client({ baseUrl: up.url, retry: { retries: 1, backoffMs: 10 } });
    expect(await c.json({ path: '/get' })).toEqual({ ok: true });
    expect(up.seen).toEqual(['GET /get', 'GET /get']);

    resets = 1;
    up.seen.length = 0;
    await expect(c.request({ method: 'POST', path: '/post', json: {} })).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
    expect(up.seen).toEqual(['POST /post']);

    resets = 1;
    up.seen.length = 0;
    expect(await c.json({ method: 'POST', path: '/safe', json: {}, safe: true })).toEqual({ ok: true });
    expect(up.seen).toEqual(['POST /safe', 'POST /safe']);
  });

  it('retries 502 and 503 where safe, waiting a Retry-After within its cap', async () => {
    const answers: [number, Record<string, string>][] = [
      [503, { 'retry-after': '1' }],
      [502, {}],
    ];
    const up = await upstream((_req, res) => {
      const next = answers.shift();
      if (next === undefined) json(res, 200, { ok: true });
      else json(res, next[0], { detail: 'later' }, next[1]);
    });
    const reasons: string[] = [];
    const c = client({
      baseUrl: up.url,
      retry: { retries: 3, backoffMs: 10, onRetry: (r) => reasons.push(r) },
    });
    const started = Date.now();
    const result = await c.request({ path: '/' });
    expect(result).toMatchObject({ status: 200, attempts: 3 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(reasons).toEqual(['status_503', 'status_502']);
  });

  it('takes a Retry-After past the cap as final, and passes it on', async () => {
    const up = await upstream((_req, res) =>
      json(res, 503, { detail: 'loading the model' }, { 'retry-after': '60' }),
    );
    const c = client({ baseUrl: up.url, label: 'The demo', retry: { retries: 3, backoffMs: 10 } });
    const error = await c.json({ path: '/' }).catch((e: unknown) => e);
    expect(up.seen).toHaveLength(1);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({
      message: 'The demo is not available (503): loading the model',
      headers: { 'retry-after': '60' },
    });
  });

  it('never retries a status for a POST not marked safe, nor a 500 or a 4xx', async () => {
    const up = await upstream((req, res) =>
      json(res, req.url === '/500' ? 500 : req.url === '/400' ? 400 : 503, {}),
    );
    const c = client({ baseUrl: up.url, retry: { retries: 2, backoffMs: 10 } });
    expect((await c.request({ method: 'POST', path: '/503', json: {} })).status).toBe(503);
    expect((await c.request({ path: '/500' })).status).toBe(500);
    expect((await c.request({ path: '/400' })).status).toBe(400);
    expect(up.seen).toEqual(['POST /503', 'GET /500', 'GET /400']);
  });

  it('stops waiting between attempts when the caller gives up or the deadline passes', async () => {
    const up = await upstream((_req, res) => json(res, 503, {}));
    const c = client({ baseUrl: up.url, retry: { retries: 5, backoffMs: 1000 } });
    const controller = new AbortController();
    const reason = new Error('bye');
    setTimeout(() => controller.abort(reason), 150);
    const started = Date.now();
    await expect(c.request({ path: '/', signal: controller.signal })).rejects.toBe(reason);
    await expect(c.request({ path: '/', timeoutMs: 200 })).rejects.toBeInstanceOf(GatewayTimeoutError);
    expect(Date.now() - started).toBeLessThan(1500);
  });
});

describe('failure mapping', () => {
  it('keeps the upstream message of a 4xx/5xx, with the token taken out', async () => {
    const up = await upstream((req, res) =>
      json(res, req.url === '/auth' ? 401 : 500, {
        error: { message: `bad token ${req.headers.authorization?.slice(7) ?? ''} here` },
      }),
    );
    const c = client({ baseUrl: up.url, label: 'The demo', token: 'secret-token-1' });
    const e500 = await c.json({ path: '/boom' }).catch((e: unknown) => e);
    expect(e500).toEqual(new BadGatewayError('The demo failed (500): bad token [REDACTED] here'));
    const e401 = await c.json({ path: '/auth' }).catch((e: unknown) => e);
    expect(e401).toEqual(
      new BadGatewayError('The demo refused the credentials (401): bad token [REDACTED] here'),
    );
    expect(JSON.stringify([String(e500), String(e401)])).not.toContain('secret-token-1');
  });

  it('maps an unreachable upstream and a timeout through the mapping a client gives', async () => {
    const port = await freePort();
    const c = client({
      baseUrl: `http://127.0.0.1:${port}`,
      failures: {
        unreachable: (f) => new BadGatewayError(`gone (${f.cause}; delivered ${String(f.delivered)})`),
      },
    });
    await expect(c.request({ path: '/' })).rejects.toEqual(
      new BadGatewayError('gone (ECONNREFUSED; delivered false)'),
    );
    const up = await upstream(() => undefined);
    const slow = client({ baseUrl: up.url, timeoutMs: 100 });
    await expect(
      slow.request({
        path: '/',
        failures: { timeout: (f) => new BadGatewayError(`timed out after ${f.timeoutMs} ms (${f.kind})`) },
      }),
    ).rejects.toEqual(new BadGatewayError('timed out after 100 ms (timeout)'));
  });
});

describe('metrics', () => {
  it('counts and times every exchange per upstream on the registry, several clients on one', async () => {
    const up = await upstream((req, res) => json(res, req.url === '/missing' ? 404 : 200, {}));
    const registry = new Registry();
    const a = client({ name: 'alpha', baseUrl: up.url, metrics: { registry } as never });
    const b = client({ name: 'beta', baseUrl: up.url, metrics: registry });
    await a.request({ path: '/' });
    await a.request({ path: '/missing' });
    await b.request({ method: 'POST', path: '/', json: {} });
    const res = await b.send({ path: '/' });
    res.cancel();
    expect(await metricLines(registry, 'http_client_requests_total')).toEqual([
      'http_client_requests_total{upstream="alpha",method="GET",outcome="2xx"} 1',
      'http_client_requests_total{upstream="alpha",method="GET",outcome="4xx"} 1',
      'http_client_requests_total{upstream="beta",method="POST",outcome="2xx"} 1',
      'http_client_requests_total{upstream="beta",method="GET",outcome="2xx"} 1',
    ]);
    const counts = await metricLines(registry, 'http_client_request_duration_seconds_count');
    expect(counts).toHaveLength(4);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE http_client_request_duration_seconds histogram');
    expect(text).toContain('# HELP http_client_retries_total ');
  });
});

describe('server-sent events', () => {
  async function parse(chunks: (string | Uint8Array)[], dispatchAtEnd?: boolean): Promise<SseEvent[]> {
    const out: SseEvent[] = [];
    const source = (async function* () {
      for (const c of chunks) yield await Promise.resolve(c);
    })();
    for await (const e of parseEventStream(source, dispatchAtEnd === undefined ? {} : { dispatchAtEnd }))
      out.push(e);
    return out;
  }
  const msg = (data: string, id = '', event = 'message'): SseEvent => ({ event, data, id });

  it('ends lines with LF, CRLF or CR, a CRLF split between chunks too', async () => {
    expect(await parse(['data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\r', '\n\r', '\n'])).toEqual([
      msg('a'),
      msg('b'),
      msg('c'),
      msg('d'),
    ]);
  });

  it('joins data lines with LF, strips one space, and reads a field without a colon as empty', async () => {
    expect(await parse(['data:  two spaces\ndata:x\ndata\n\n'])).toEqual([msg(' two spaces\nx\n')]);
    expect(await parse(['data\n\n'])).toEqual([msg('')]);
  });

  it('skips comments, unknown fields, retry, and events without data', async () => {
    expect(await parse([': keep-alive\n\nretry: 10\nfoo: bar\n\nevent: x\n\n:c\ndata: y\n\n'])).toEqual([
      msg('y'),
    ]);
  });

  it('names events and carries the last id, ignoring one with a NUL', async () => {
    expect(
      await parse(['event: delta\nid: 7\ndata: a\n\ndata: b\n\nid: bad\0id\ndata: c\n\nid\ndata: d\n\n']),
    ).toEqual([msg('a', '7', 'delta'), msg('b', '7'), msg('c', '7'), msg('d', '')]);
  });

  it('drops a leading BOM (bytes or text), only at the start', async () => {
    const bom = new Uint8Array([0xef, 0xbb, 0xbf]);
    const rest = new TextEncoder().encode('data: a\n\n');
    expect(await parse([bom, rest])).toEqual([msg('a')]);
    expect(await parse(['\uFEFFdata: a\n\n\uFEFFdata: b\n\n'])).toEqual([msg('a')]);
  });

  it('decodes a character split between chunks', async () => {
    const bytes = new TextEncoder().encode('data: bệnh nhân\n\n');
    const cut = 9; // inside the two-byte ệ
    expect(await parse([bytes.slice(0, cut), bytes.slice(cut)])).toEqual([msg('bệnh nhân')]);
  });

  it('drops an event without its blank line at the end unless asked, and a cut-off last line always', async () => {
    expect(await parse(['data: a\n\ndata: [DONE]\n'])).toEqual([msg('a')]);
    expect(await parse(['data: a\n\ndata: [DONE]\n'], true)).toEqual([msg('a'), msg('[DONE]')]);
    expect(await parse(['data: a\n\ndata: {"cut'], true)).toEqual([msg('a')]);
  });

  it('fails a stream whose event grows past the limit', async () => {
    const source = (async function* () {
      for (let i = 0; i < 10; i++) yield await Promise.resolve(`data: ${'x'.repeat(100)}\n`);
    })();
    const read = async (): Promise<void> => {
      for await (const event of parseEventStream(source, { maxEventChars: 500 }))
        expect(event).toBeUndefined();
    };
    await expect(read()).rejects.toBeInstanceOf(BadGatewayError);
  });

  it('reads events over the wire as they come, in odd cuts', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const parts = ['da', 'ta: {"n":1}\r', '\n\r\n: ping\n\nevent: end\ndata: [DONE]\n', '\n'];
      let i = 0;
      const timer = setInterval(() => {
        res.write(parts[i++]);
        if (i === parts.length) {
          clearInterval(timer);
          res.end();
        }
      }, 20);
    });
    const res = await client({ baseUrl: up.url }).send({ path: '/stream' });
    const events: SseEvent[] = [];
    for await (const e of res.events()) events.push(e);
    expect(events).toEqual([msg('{"n":1}'), msg('[DONE]', '', 'end')]);
    expect(up.closedEarly).toEqual([]);
  });

  it('stops the upstream when the reader breaks off', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
    });
    const res = await client({ baseUrl: up.url }).send({ path: '/' });
    for await (const e of res.events()) if (e.data === '1') break;
    await until(() => up.closedEarly.length === 1);
  });
});
