import { connect } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { RequestHandler } from 'express';
import { z } from 'zod';
import { Readiness, defineRoute, multipart, uploadedFiles } from '@clinicalsuite/kit';
import { ready, startTestServer, waitFor, type TestServer } from '../helpers.js';

// Readiness and the deadline come before the body; the concurrency slot after it, so a slow upload
// holds none of the few slots that guard a model.

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

describe('admission around the body', () => {
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

  it('refuses an upload while not ready (503) without storing it', async () => {
    const readiness = new Readiness('loading the model');
    const { url, parsing } = await uploadService({ readiness });
    const refused = upload(`${url}/upload`, 64 * MB, 'early');
    const res = await refused.response;
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ detail: 'Service not ready: loading the model' });
    expect(parsing).toEqual([]);
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
