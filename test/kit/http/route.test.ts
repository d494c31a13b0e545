import { connect } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { RequestHandler } from 'express';
import { z } from 'zod';
import { Readiness, defineRoute, multipart, uploadedFiles } from '@clinicalsuite/kit';
import { deferred, ready, sleep, startTestServer, waitFor, type TestServer } from '../helpers.js';

// Admission comes before the body: readiness and the concurrency slot are decided on the headers,
// so a queued or refused upload stays unread on the socket instead of in the process's memory.

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

describe('admission before the body', () => {
  let srv: TestServer | undefined;
  afterEach(async () => {
    await srv?.close();
    srv = undefined;
  });

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
          defineRoute({
            method: 'post',
            path: '/json',
            summary: 'json',
            body: z.object({ text: z.string() }),
            handler: ({ body }) => ({ chars: body.text.length }),
          }),
        ],
      },
      { MAX_CONCURRENCY: '1', BODY_LIMIT: '100mb', ...env },
    );
    return { url: srv.url, parsing };
  }

  it('leaves a queued upload unread on the socket until it gets a slot', async () => {
    const hold = deferred();
    const { url, parsing } = await uploadService({ hold: hold.promise });
    const first = upload(`${url}/upload`, 1024, 'first');
    await waitFor(() => srv!.kit.gate.running === 1 && parsing.includes('first'));

    const size = 64 * MB;
    const queued = upload(`${url}/upload`, size, 'queued');
    await waitFor(() => srv!.kit.gate.waiting === 1);
    await sleep(300);
    // Its body was not parsed: the client could hand over only what the socket buffers hold.
    expect(parsing).toEqual(['first']);
    expect(queued.pulled()).toBeLessThan(16 * MB);

    hold.resolve();
    expect(await (await first.response).json()).toEqual({ size: 1024 });
    const res = await queued.response;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ size });
    expect(parsing).toEqual(['first', 'queued']);
  }, 30_000);

  it('keeps a queued JSON body unread too', async () => {
    const hold = deferred();
    const { url } = await uploadService({ hold: hold.promise });
    const first = upload(`${url}/upload`, 1, 'first');
    await waitFor(() => srv!.kit.gate.running === 1);
    const text = 'x'.repeat(48 * MB);
    let pulled = 0;
    const json = Buffer.from(JSON.stringify({ text }));
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (pulled >= json.length) {
            controller.close();
            return;
          }
          controller.enqueue(json.subarray(pulled, pulled + MB));
          pulled += MB;
        },
      },
      { highWaterMark: 0 },
    );
    const queued = fetch(`${url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    });
    await waitFor(() => srv!.kit.gate.waiting === 1);
    await sleep(300);
    expect(pulled).toBeLessThan(16 * MB);
    hold.resolve();
    await first.response;
    expect(await (await queued).json()).toEqual({ chars: text.length });
  }, 30_000);

  it('refuses an upload while not ready (503) or when the queue is full (429) without reading it', async () => {
    const readiness = new Readiness('loading the model');
    const { url, parsing } = await uploadService({ readiness }, { QUEUE_SIZE: '0' });
    const refused = upload(`${url}/upload`, 64 * MB, 'early');
    const res = await refused.response;
    expect(res.status).toBe(503);
    expect(refused.pulled()).toBeLessThan(16 * MB);
    expect(await res.json()).toEqual({ detail: 'Service not ready: loading the model' });

    readiness.setReady();
    const hold = deferred();
    let entered = 0;
    srv!.kit.gate.acquire().then(
      (release) => {
        entered += 1;
        void hold.promise.then(release);
      },
      () => undefined,
    );
    await waitFor(() => entered === 1);
    const full = upload(`${url}/upload`, 64 * MB, 'full');
    const busy = await full.response;
    expect(busy.status).toBe(429);
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(full.pulled()).toBeLessThan(16 * MB);
    expect(parsing).toEqual([]);
    hold.resolve();
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
    // Node's own limit on receiving a request stays behind the kit's deadline, which covers the
    // queue wait that now comes before the body.
    expect(srv!.server.server.requestTimeout).toBeGreaterThan(srv!.kit.config.REQUEST_TIMEOUT_MS);
  }, 30_000);
});
