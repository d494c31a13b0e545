import { connect } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { RequestHandler } from 'express';
import { z } from 'zod';
import { BadRequestError, Readiness, defineRoute, multipart, uploadedFiles } from '@clinicalsuite/kit';
import { ready, startTestServer, waitFor, type TestServer } from '../helpers.js';

// The deadline comes before the body; validation, readiness and the concurrency slot after it, so a
// malformed request gets its 4xx whether or not the service is ready, and a slow upload holds none
// of the few slots that guard a model.

const MB = 1024 * 1024;
const BOUNDARY = 'kit-admission-boundary';

/**
 * A multipart body of one `size`-byte file, produced as the connection takes it; `pulled()` says
 * how much of it the client has handed to the socket so far.
 */
function streamingUpload(size: number): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const chunk = new Uint8Array(MB).fill(7);
  let sent = 0;
  let stage: 'head' | 'file' | 'tail' | 'done' = 'head';
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (stage === 'head') {
          controller.enqueue(head);
          stage = 'file';
        } else if (stage === 'file') {
          const n = Math.min(MB, size - sent);
          controller.enqueue(n === MB ? chunk : chunk.subarray(0, n));
          sent += n;
          if (sent >= size) stage = 'tail';
        } else if (stage === 'tail') {
          controller.enqueue(tail);
          stage = 'done';
        } else {
          controller.close();
        }
      },
    },
    { highWaterMark: 0 },
  );
  return { body, pulled: () => sent };
}

/** A JSON route answering the length of its `text`. */
const jsonRoute = defineRoute({
  method: 'post',
  path: '/json',
  summary: 'json',
  body: z.object({ text: z.string() }),
  handler: ({ body }) => ({ chars: body.text.length }),
});

function upload(url: string, size: number, tag: string) {
  const { body, pulled } = streamingUpload(size);
  const response = fetch(url, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'x-tag': tag },
    body,
    duplex: 'half',
  });
  return { response, pulled };
}

/** The server of the test running now, closed after it. */
let srv: TestServer | undefined;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
});

describe('admission around the body', () => {
  /** A service with one slot whose upload route records when each request's body parsing began. */
  async function uploadService(
    options: { readiness?: Readiness; timeoutMs?: number; hold?: Promise<void> } = {},
    env: Record<string, string> = {},
  ) {
    const parsing: string[] = [];
    const probe: RequestHandler = (req, _res, next) => {
      parsing.push(String(req.headers['x-tag']));
      next();
    };
    srv = await startTestServer(
      {
        readiness: options.readiness ?? ready(),
        routes: [
          defineRoute({
            method: 'post',
            path: '/upload',
            summary: 'upload',
            body: z.object({}),
            bodyParser: [
              probe,
              ...multipart({ files: [{ name: 'file', maxCount: 1 }], maxFileBytes: 100 * MB }),
            ],
            ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
            handler: async ({ req }) => {
              if (req.headers['x-tag'] === 'first') await options.hold;
              return { size: uploadedFiles(req, 'file')[0]?.size };
            },
          }),
          jsonRoute,
        ],
      },
      { MAX_CONCURRENCY: '1', BODY_LIMIT: '100mb', ...env },
    );
    return { url: srv.url, parsing };
  }

  it('gives no slot to a stalled upload: another request is served while it waits for bytes', async () => {
    const { url, parsing } = await uploadService();
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(
      `POST /upload HTTP/1.1\r\nHost: x\r\nx-tag: stalled\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
        `Content-Length: ${String(10 * MB)}\r\n\r\n--${BOUNDARY}\r\n` +
        'Content-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n',
    );
    socket.write(Buffer.alloc(64 * 1024, 1)); // then nothing more
    await waitFor(() => parsing.includes('stalled'));
    // One slot (MAX_CONCURRENCY 1), and the stalled upload does not hold it.
    expect(srv!.kit.gate.running).toBe(0);
    const started = performance.now();
    const res = await fetch(`${url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'abc' }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ chars: 3 });
    expect(performance.now() - started).toBeLessThan(2000);
    socket.destroy();
  }, 30_000);

  it('reads and validates an upload while not ready: 503 for a well-formed one, holding no slot', async () => {
    const readiness = new Readiness('loading the model');
    const { url, parsing } = await uploadService({ readiness });
    const refused = upload(`${url}/upload`, 8 * MB, 'early');
    const res = await refused.response;
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ detail: 'Service not ready: loading the model' });
    expect(parsing).toEqual(['early']);
    expect(srv!.kit.gate.running).toBe(0);
  }, 30_000);

  it('counts a slow upload against the deadline: 504, the connection closed, the slot given back', async () => {
    const { url } = await uploadService({ timeoutMs: 300 });
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (received += d));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.write(
      `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
        `Content-Length: ${String(10 * MB)}\r\n\r\n--${BOUNDARY}\r\n` +
        'Content-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n',
    );
    socket.write(Buffer.alloc(64 * 1024, 1)); // then nothing more: a stalled client
    const started = performance.now();
    await closed;
    expect(performance.now() - started).toBeLessThan(5000);
    expect(received).toMatch(/^HTTP\/1\.1 504 /);
    expect(received.toLowerCase()).toContain('connection: close');
    expect(srv!.kit.gate.running).toBe(0);
    const next = upload(`${url}/upload`, 10, 'after');
    expect((await next.response).status).toBe(200);
    // Node's own limit on receiving a request stays behind the kit's deadline.
    expect(srv!.server.server.requestTimeout).toBeGreaterThan(srv!.kit.config.REQUEST_TIMEOUT_MS);
  }, 30_000);
});

describe('validation before readiness', () => {
  /** A JSON route with a body schema (400 on a bad body, as the medical LLM's spec says). */
  const strict = defineRoute({
    method: 'post',
    path: '/strict',
    summary: 'strict',
    body: z.object({ text: z.string().min(1) }),
    validationStatus: 400,
    handler: ({ body }) => ({ chars: body.text.length }),
  });
  /** A route whose handler checks the upload the schema cannot see, then asks for readiness. */
  const checked = defineRoute({
    method: 'post',
    path: '/checked',
    summary: 'checked',
    body: z.object({}),
    bodyParser: multipart({ files: [{ name: 'file', maxCount: 1 }], maxFileBytes: MB }),
    requiresReady: 'in-handler',
    handler: ({ req, requireReady }) => {
      const file = uploadedFiles(req, 'file')[0];
      if (file?.buffer?.toString('utf8') !== 'good') throw new BadRequestError('the file is not good');
      requireReady();
      return { ok: true };
    },
  });
  const post = (url: string, body: string) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const form = (text: string): FormData => {
    const data = new FormData();
    data.append('file', new Blob([text]), 'f.txt');
    return data;
  };

  it('answers a body that breaks its schema with 400 while not ready, and a valid one with 503', async () => {
    const readiness = new Readiness('loading the model');
    srv = await startTestServer({ readiness, routes: [strict, checked] });
    const bad = await post(`${srv.url}/strict`, JSON.stringify({ text: '' }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: { loc: string[] }[] }).detail[0]?.loc).toEqual(['body', 'text']);
    const notJson = await post(`${srv.url}/strict`, '{"text": ');
    expect(notJson.status).toBe(400);
    const good = await post(`${srv.url}/strict`, JSON.stringify({ text: 'abc' }));
    expect([good.status, await good.json()]).toEqual([
      503,
      { detail: 'Service not ready: loading the model' },
    ]);

    // A route that validates in its handler: the same order.
    const badFile = await fetch(`${srv.url}/checked`, { method: 'POST', body: form('bad') });
    expect([badFile.status, await badFile.json()]).toEqual([400, { detail: 'the file is not good' }]);
    const goodFile = await fetch(`${srv.url}/checked`, { method: 'POST', body: form('good') });
    expect(goodFile.status).toBe(503);

    readiness.setReady();
    expect((await post(`${srv.url}/strict`, JSON.stringify({ text: 'abc' }))).status).toBe(200);
    expect((await fetch(`${srv.url}/checked`, { method: 'POST', body: form('good') })).status).toBe(200);
  });

  it('documents the 503 of a route that checks readiness in its handler', async () => {
    srv = await startTestServer({ readiness: ready(), routes: [checked] });
    const doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as {
      paths: Record<string, { post: { responses: Record<string, unknown> } }>;
    };
    expect(Object.keys(doc.paths['/checked']!.post.responses)).toContain('503');
  });
});

describe('request bodies held in memory (BODY_MEMORY_LIMIT)', () => {
  /**
   * A service whose bodies may hold 1 MB in all, one request all of it (test/kit/http/body-memory
   * tests the share); `/disk` streams its upload to disk.
   */
  async function service() {
    srv = await startTestServer(
      {
        readiness: ready(),
        routes: [
          defineRoute({
            method: 'post',
            path: '/upload',
            summary: 'upload',
            body: z.object({}),
            bodyParser: multipart({ files: [{ name: 'file', maxCount: 1 }], maxFileBytes: 100 * MB }),
            handler: ({ req }) => {
              const file = uploadedFiles(req, 'file')[0];
              return { size: file?.size, sevens: file?.buffer?.every((b) => b === 7) };
            },
          }),
          defineRoute({
            method: 'post',
            path: '/disk',
            summary: 'disk upload',
            body: z.object({}),
            bodyInMemory: false,
            bodyParser: multipart({
              files: [{ name: 'file', maxCount: 1 }],
              maxFileBytes: 100 * MB,
              storage: 'disk',
            }),
            handler: ({ req }) => ({ size: uploadedFiles(req, 'file')[0]?.size }),
          }),
          jsonRoute,
        ],
      },
      { BODY_MEMORY_LIMIT: '1mb', BODY_MEMORY_SHARE: '1mb', BODY_LIMIT: '100mb' },
    );
    return srv;
  }

  const PART_HEAD =
    `--${BOUNDARY}\r\n` + 'Content-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n';

  /**
   * A declared `length`-byte upload that sends its head and `sent` bytes, then stalls; `held` is
   * what it has sent of its body.
   */
  function stalledUpload(url: string, length: number, sent: number) {
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (received += d));
    socket.on('error', () => undefined);
    socket.write(
      `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
        `Content-Length: ${String(length)}\r\n\r\n${PART_HEAD}`,
    );
    socket.write(Buffer.alloc(sent, 7));
    return { socket, received: () => received, held: PART_HEAD.length + sent };
  }

  async function metric(url: string, name: string): Promise<number> {
    const text = await (await fetch(`${url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return Number(line?.split(' ').pop());
  }

  it('refuses a declared body past the room left with 503 and Retry-After, before reading it, and takes it once room is back', async () => {
    const { url, kit } = await service();
    const stalled = stalledUpload(url, 900 * 1024, 800 * 1024);
    await waitFor(() => kit.bodyMemory.inUse === stalled.held);
    expect(await metric(url, 'clinicalsuite_request_body_memory_bytes')).toBe(stalled.held);

    const refused = await fetch(`${url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x'.repeat(300 * 1024) }),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(await refused.json()).toEqual({
      detail: 'The service is holding as many request bodies as its BODY_MEMORY_LIMIT allows; retry shortly',
    });
    expect(await metric(url, 'clinicalsuite_body_memory_rejections_total')).toBe(1);
    // A small body still fits beside the stalled one.
    const small = await fetch(`${url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'abc' }),
    });
    expect(await small.json()).toEqual({ chars: 3 });

    stalled.socket.destroy();
    await waitFor(() => kit.bodyMemory.inUse === 0);
    const taken = await fetch(`${url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x'.repeat(300 * 1024) }),
    });
    expect(await taken.json()).toEqual({ chars: 300 * 1024 });
    expect(kit.bodyMemory.inUse).toBe(0);
  }, 30_000);

  it('counts a chunked body as it arrives: past the budget, 503 at once and the connection closed', async () => {
    const { url, kit } = await service();
    const stalled = stalledUpload(url, 900 * 1024, 800 * 1024);
    await waitFor(() => kit.bodyMemory.inUse === stalled.held);
    const big = upload(`${url}/upload`, 8 * MB, 'chunked');
    const res = await big.response;
    expect(res.status).toBe(503);
    expect(res.headers.get('connection')).toBe('close');
    expect(res.headers.get('retry-after')).toBe('2');
    // Refused as the bytes came, not after the whole 8 MB.
    expect(big.pulled()).toBeLessThan(8 * MB);
    // A chunked JSON body alike, through express.json.
    const json = await fetch(`${url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Blob([JSON.stringify({ text: 'z'.repeat(2 * MB) })]).stream(),
      duplex: 'half',
    });
    expect(json.status).toBe(503);
    expect(await metric(url, 'clinicalsuite_body_memory_rejections_total')).toBe(2);
    stalled.socket.destroy();
    await waitFor(() => kit.bodyMemory.inUse === 0);
  }, 30_000);

  it('reads a chunked body that fits whole, byte for byte, and gives its bytes back', async () => {
    const { url, kit } = await service();
    const fits = upload(`${url}/upload`, 700 * 1024, 'chunked');
    expect(await (await fits.response).json()).toEqual({ size: 700 * 1024, sevens: true });
    const json = await fetch(`${url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Blob([JSON.stringify({ text: 'y'.repeat(500 * 1024) })]).stream(),
      duplex: 'half',
    });
    expect(await json.json()).toEqual({ chars: 500 * 1024 });
    await waitFor(() => kit.bodyMemory.inUse === 0);
  }, 30_000);

  it('does not count the rest of a body refused before it was read (Node discards it)', async () => {
    const { url, kit } = await service();
    const { body } = streamingUpload(4 * MB);
    const res = await fetch(`${url}/upload`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body,
      duplex: 'half',
    });
    expect(res.status).toBe(415);
    await res.text();
    await waitFor(() => kit.bodyMemory.inUse === 0);
    expect(await metric(url, 'clinicalsuite_body_memory_rejections_total')).toBe(0);
  }, 30_000);

  it('answers 413 naming the setting for a body larger than the whole budget, and leaves disk uploads uncounted', async () => {
    const { url, kit } = await service();
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(2 * MB)]), 'big.bin');
    const tooBig = await fetch(`${url}/upload`, { method: 'POST', body: form });
    expect(tooBig.status).toBe(413);
    expect(((await tooBig.json()) as { detail: string }).detail).toMatch(
      /larger than this service's BODY_MEMORY_LIMIT \(1048576 bytes\).*raise BODY_MEMORY_LIMIT/,
    );
    const disk = await fetch(`${url}/disk`, { method: 'POST', body: form });
    expect(await disk.json()).toEqual({ size: 2 * MB });
    expect(kit.bodyMemory.inUse).toBe(0);
  }, 30_000);
});

describe('malformed requests are client errors, never 500s or held connections', () => {
  async function service() {
    srv = await startTestServer(
      {
        readiness: ready(),
        routes: [
          jsonRoute,
          defineRoute({
            method: 'get',
            path: '/items/:id',
            summary: 'item',
            params: z.object({ id: z.string() }),
            handler: ({ params }) => ({ id: params.id }),
          }),
        ],
      },
      { BODY_IDLE_TIMEOUT_MS: '300' },
    );
    return srv;
  }

  /** Sends raw bytes and resolves with everything the server wrote before closing (or 5 s). */
  function raw(url: string, request: string): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(Number(new URL(url).port), '127.0.0.1');
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (received += d));
      socket.on('error', () => undefined);
      const done = setTimeout(() => socket.destroy(), 5000);
      socket.once('close', () => {
        clearTimeout(done);
        resolve(received);
      });
      socket.write(request);
      if (!/^POST/.test(request)) socket.end();
    });
  }

  it('400 for a path parameter that is not valid percent-encoding', async () => {
    const { url } = await service();
    for (const id of ['%E0%A4%A', '%FF%FE', '%']) {
      const res = await raw(url, `GET /items/${id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(res).toMatch(/^HTTP\/1\.1 400 /);
      expect(res).toContain('{"detail":"A path parameter is not valid percent-encoded UTF-8"}');
    }
    expect(await (await fetch(`${url}/items/b%E1%BB%87nh`)).json()).toEqual({ id: 'bệnh' });
  });

  it('400 for a body that is not what its Content-Encoding says', async () => {
    const { url } = await service();
    for (const encoding of ['gzip', 'deflate']) {
      const res = await fetch(`${url}/json`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        body: JSON.stringify({ text: 'abc' }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        detail: 'The request body does not match its Content-Encoding (gzip, deflate or br)',
      });
    }
  });

  it('408 and the connection closed when the body stops short of its Content-Length', async () => {
    const { url, kit } = await service();
    const started = performance.now();
    const body = JSON.stringify({ text: 'abc' });
    const res = await raw(
      url,
      `POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n${body}`,
    );
    expect(performance.now() - started).toBeLessThan(3000);
    expect(res).toMatch(/^HTTP\/1\.1 408 /);
    expect(res.toLowerCase()).toContain('connection: close');
    expect(res).toContain('No part of the request body arrived for 300 ms');
    expect(kit.bodyMemory.inUse).toBe(0);
  });
});
