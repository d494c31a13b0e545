import { connect, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from '@jest/globals';
import express, { type RequestHandler } from 'express';
import { z } from 'zod';
import { ConfigError, defineRoute, multipart, uploadedFiles } from '@clinicalsuite/kit';
import { metricValue, ready, sleep, startTestServer, waitFor, type TestServer } from '../helpers.js';

// Issue 28, attack 4: request body memory (BODY_MEMORY_LIMIT) is taken as a body's bytes arrive,
// not by its declared length; one request holds at most its share (BODY_MEMORY_SHARE); a body that
// arrives too slowly (BODY_MIN_RATE, BODY_IDLE_TIMEOUT_MS) is cut off with 408 and gives its memory
// back. Real servers on loopback ports, real sockets.

const KB = 1024;
const BOUNDARY = 'kit-body-memory-boundary';
const GAUGE = 'clinicalsuite_request_body_memory_bytes';

/** The server of the test running now, closed after it. */
let srv: TestServer | undefined;
/** Raw sockets the test opened, destroyed after it. */
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await srv?.close();
  srv = undefined;
});

/** The largest `inUse` seen by a route while its body arrived (bodies' own bytes counted by then). */
let highWater = 0;

/**
 * A service whose bodies may hold `BODY_MEMORY_LIMIT` 1 MB in all (share: half unless `env` says),
 * with a multipart `/upload`, a JSON `/json`, a raw `/raw` and a `/slow` route that waits
 * `?wait=ms` before answering (or throws for `?fail=1`).
 */
async function service(env: Record<string, string> = {}, options: { timeoutMs?: number } = {}) {
  highWater = 0;
  const watch: RequestHandler = (req, _res, next) => {
    req.on('data', () => {
      highWater = Math.max(highWater, srv?.kit.bodyMemory.inUse ?? 0);
    });
    next();
  };
  srv = await startTestServer(
    {
      readiness: ready(),
      routes: [
        defineRoute({
          method: 'post',
          path: '/upload',
          summary: 'upload',
          body: z.object({}),
          bodyParser: [
            watch,
            ...multipart({ files: [{ name: 'file', maxCount: 1 }], maxFileBytes: 10 * 1024 * KB }),
          ],
          handler: ({ req }) => ({ size: uploadedFiles(req, 'file')[0]?.size }),
        }),
        defineRoute({
          method: 'post',
          path: '/json',
          summary: 'json',
          body: z.object({ text: z.string() }),
          bodyParser: [watch, express.json({ limit: '10mb' })],
          handler: ({ body }) => ({ chars: body.text.length }),
        }),
        defineRoute({
          method: 'post',
          path: '/raw',
          summary: 'raw',
          body: z.unknown(),
          bodyParser: [watch, express.raw({ type: () => true, limit: '10mb' })],
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
          handler: async ({ req, signal }) => {
            const query = req.query as Record<string, string | undefined>;
            // Stops waiting at the deadline, as a handler's work does.
            if (query['wait'] !== undefined) await delay(Number(query['wait']), undefined, { signal });
            if (query['fail'] !== undefined) throw new Error('the handler failed');
            return { bytes: (req.body as Buffer).length };
          },
        }),
      ],
    },
    { BODY_MEMORY_LIMIT: '1mb', BODY_LIMIT: '10mb', ...env },
  );
  return srv;
}

/** A raw HTTP/1.1 request on its own socket: what it received, and whether it closed. */
function rawRequest(url: string, head: string) {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  sockets.push(socket);
  let received = '';
  let closed = false;
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (received += d));
  socket.on('error', () => undefined);
  const done = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true;
      resolve();
    }),
  );
  socket.write(head);
  return {
    socket,
    done,
    received: () => received,
    closed: () => closed,
    /** The status line's code, once an answer came. */
    status: () => Number(/^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1] ?? 0),
    write: (data: string | Buffer) => {
      if (!socket.destroyed) socket.write(data);
    },
  };
}

/** The head of a multipart upload of one file that declares `length` bytes in all. */
function multipartHead(path: string, length: number): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
    `Content-Length: ${String(length)}\r\n\r\n--${BOUNDARY}\r\n` +
    'Content-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n'
  );
}

/** A client that declares `length` bytes, then sends one byte every `everyMs` until answered. */
function trickle(url: string, head: string, everyMs: number) {
  const request = rawRequest(url, head);
  const timer = setInterval(() => request.write('x'), everyMs);
  void request.done.finally(() => clearInterval(timer));
  return { ...request, stop: () => clearInterval(timer) };
}

const json = (url: string, text: string) =>
  fetch(`${url}/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });

function form(bytes: number): FormData {
  const body = new FormData();
  body.append('file', new Blob([new Uint8Array(bytes).fill(7)]), 'scan.bin');
  return body;
}

describe('one slow upload does not block the others (issue 28, attack 4)', () => {
  it('a client that declares the whole budget and sends a byte at a time holds only those bytes; other uploads are served; it is cut off with 408', async () => {
    // The share is the whole budget here: room is taken as bytes arrive, whatever the share.
    const { url, kit } = await service({
      BODY_MEMORY_SHARE: '1mb',
      BODY_IDLE_TIMEOUT_MS: '1500',
      BODY_MIN_RATE: '1kb',
    });
    const slow = trickle(url, multipartHead('/upload', 1024 * KB), 250);
    const started = performance.now();
    await waitFor(() => kit.bodyMemory.inUse > 0);
    expect(kit.bodyMemory.inUse).toBeLessThan(1 * KB);

    // Uploads and JSON bodies go on being served beside it.
    const upload = await fetch(`${url}/upload`, { method: 'POST', body: form(600 * KB) });
    expect(upload.status).toBe(200);
    expect(await upload.json()).toEqual({ size: 600 * KB });
    const text = await json(url, 'y'.repeat(700 * KB));
    expect(await text.json()).toEqual({ chars: 700 * KB });
    expect(slow.closed()).toBe(false); // still trickling while they were served
    expect(await metricValue(url, 'clinicalsuite_body_memory_rejections_total')).toBe(0);

    // Each gap (250 ms) is under BODY_IDLE_TIMEOUT_MS; the pace is not: cut off once the slack is over.
    await slow.done;
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1400);
    expect(elapsed).toBeLessThan(6000);
    expect(slow.status()).toBe(408);
    expect(slow.received().toLowerCase()).toContain('connection: close');
    expect(slow.received()).toMatch(
      /The request body arrived too slowly: \d+ bytes in [\d.]+ s, under the minimum of 1024 bytes per second \(BODY_MIN_RATE\)/,
    );
    await waitFor(() => kit.bodyMemory.inUse === 0);
    expect(await metricValue(url, GAUGE)).toBe(0);
  }, 30_000);

  it('a slowloris of 50 such clients keeps other requests served, and each is cut off and gives its memory back', async () => {
    const { url, kit } = await service({ BODY_IDLE_TIMEOUT_MS: '2500', BODY_MIN_RATE: '1kb' });
    // Each declares 500 KB (within its share of a 1 MB budget): two such declarations filled it.
    const body = `{"text":"${'z'.repeat(500 * KB - 12)}"}`;
    const attackers = Array.from({ length: 50 }, (_, i) =>
      i % 2 === 0
        ? trickle(url, multipartHead('/upload', 500 * KB), 200)
        : trickle(
            url,
            'POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
              `Content-Length: ${String(Buffer.byteLength(body))}\r\n\r\n{"text":"`,
            200,
          ),
    );
    const started = performance.now();
    await waitFor(() => kit.live.size >= 50);

    for (let round = 0; round < 3; round++) {
      const [upload, text] = await Promise.all([
        fetch(`${url}/upload`, { method: 'POST', body: form(300 * KB) }),
        json(url, 'q'.repeat(200 * KB)),
      ]);
      expect(upload.status).toBe(200);
      expect(await upload.json()).toEqual({ size: 300 * KB });
      expect(await text.json()).toEqual({ chars: 200 * KB });
    }
    // All of that while every attacker was still connected and trickling.
    expect(attackers.filter((a) => a.closed())).toEqual([]);

    await Promise.all(attackers.map((a) => a.done));
    expect(attackers.map((a) => a.status())).toEqual(attackers.map(() => 408));
    expect(performance.now() - started).toBeLessThan(10_000);
    await waitFor(() => kit.bodyMemory.inUse === 0);
    expect(await metricValue(url, GAUGE)).toBe(0);
    expect(await metricValue(url, 'clinicalsuite_body_memory_rejections_total')).toBe(0);
    expect(highWater).toBeLessThanOrEqual(kit.bodyMemory.limit);
  }, 30_000);
});

describe('body memory is taken as bytes arrive and given back however the request ends', () => {
  it('a declared body holds what has arrived, not its length', async () => {
    const { url, kit } = await service({ BODY_MEMORY_SHARE: '1mb' });
    const head =
      'POST /raw HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      `Content-Length: ${String(600 * KB)}\r\n\r\n`;
    const upload = rawRequest(url, head);
    upload.write(Buffer.alloc(100 * KB, 1));
    await waitFor(() => kit.bodyMemory.inUse === 100 * KB);
    expect(await metricValue(url, GAUGE)).toBe(100 * KB);
    // 600 KB declared and 800 KB declared would not fit together; 100 KB held and 800 KB do.
    const beside = await fetch(`${url}/raw`, { method: 'POST', body: new Uint8Array(800 * KB) });
    expect(await beside.json()).toEqual({ bytes: 800 * KB });
    upload.write(Buffer.alloc(300 * KB, 1));
    await waitFor(() => kit.bodyMemory.inUse === 400 * KB);
    upload.write(Buffer.alloc(200 * KB, 1));
    await waitFor(() => upload.status() === 200);
    expect(upload.received()).toContain(`{"bytes":${String(600 * KB)}}`);
    await waitFor(() => kit.bodyMemory.inUse === 0);
  }, 30_000);

  it('counts a chunked body chunk by chunk, and refuses it once it passes its share: 413, the connection closed', async () => {
    const { url, kit } = await service(); // share: 512 KB
    const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;
    const request = rawRequest(
      url,
      'POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
    );
    const part = 'a'.repeat(100 * KB);
    request.write(chunk(`{"text":"${part}`));
    await waitFor(() => kit.bodyMemory.inUse === 100 * KB + 9);
    request.write(chunk(part));
    await waitFor(() => kit.bodyMemory.inUse === 200 * KB + 9);
    request.write(chunk(`${part}"}`));
    request.write('0\r\n\r\n');
    await waitFor(() => request.received().includes('"chars"'));
    expect(request.status()).toBe(200);
    expect(request.received()).toContain(`{"chars":${String(300 * KB)}}`);
    await waitFor(() => kit.bodyMemory.inUse === 0);

    // Past the share, as it arrives: answered at once, not after the whole body.
    const big = rawRequest(
      url,
      'POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
    );
    big.write(chunk(`{"text":"${'b'.repeat(400 * KB)}`));
    await waitFor(() => kit.bodyMemory.inUse > 400 * KB);
    big.write(chunk('b'.repeat(200 * KB)));
    await big.done;
    expect(big.status()).toBe(413);
    expect(big.received().toLowerCase()).toContain('connection: close');
    expect(big.received()).toMatch(
      /The body \(\d+ bytes so far\) is larger than the BODY_MEMORY_SHARE \(524288 bytes\) one request may hold in memory/,
    );
    await waitFor(() => kit.bodyMemory.inUse === 0);
    expect(await metricValue(url, GAUGE)).toBe(0);
  }, 30_000);

  it('refuses a declared length over the share with 413 before reading it, naming the setting', async () => {
    const { url, kit } = await service();
    const res = await fetch(`${url}/raw`, { method: 'POST', body: new Uint8Array(600 * KB) });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      detail:
        'The body (614400 bytes) is larger than the BODY_MEMORY_SHARE (524288 bytes) one request may hold ' +
        'in memory; send a smaller body, or raise BODY_MEMORY_SHARE to accept it',
    });
    expect(kit.bodyMemory.inUse).toBe(0);
    expect(highWater).toBe(0);
    // Within the share, taken.
    expect(
      await (await fetch(`${url}/raw`, { method: 'POST', body: new Uint8Array(500 * KB) })).json(),
    ).toEqual({
      bytes: 500 * KB,
    });
  }, 30_000);

  it('never holds more than the budget: concurrent bodies past it are refused 503 with Retry-After', async () => {
    const { url, kit } = await service();
    // Eight 300 KB uploads at once on a 1 MB budget: at most three fit at a time.
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        fetch(`${url}/upload`, {
          method: 'POST',
          body: new Blob([
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n`,
            new Uint8Array(300 * KB),
            `\r\n--${BOUNDARY}--\r\n`,
          ]).stream(),
          headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
          duplex: 'half',
        }).then(async (res) => ({
          status: res.status,
          retry: res.headers.get('retry-after'),
          body: await res.text(),
        })),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    for (const refused of results.filter((r) => r.status === 503)) expect(refused.retry).toBe('2');
    expect(highWater).toBeLessThanOrEqual(kit.bodyMemory.limit);
    await waitFor(() => kit.bodyMemory.inUse === 0);
    expect(await metricValue(url, 'clinicalsuite_body_memory_rejections_total')).toBe(
      statuses.filter((s) => s === 503).length,
    );
  }, 30_000);

  it('gives every byte back on success, a handler error, a client that leaves, an idle body and the deadline', async () => {
    const { url, kit } = await service({ BODY_IDLE_TIMEOUT_MS: '400' }, { timeoutMs: 1500 });
    const held = () => metricValue(url, GAUGE);
    const head = (query: string, length: number) =>
      `POST /raw${query} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
      `Content-Length: ${String(length)}\r\n\r\n`;

    // Success: held while the handler works, given back after.
    const working = fetch(`${url}/raw?wait=300`, { method: 'POST', body: new Uint8Array(200 * KB) });
    await waitFor(() => kit.bodyMemory.inUse === 200 * KB);
    expect((await working).status).toBe(200);
    await waitFor(async () => (await held()) === 0);

    // The handler fails: 500, given back.
    const failed = await fetch(`${url}/raw?fail=1`, { method: 'POST', body: new Uint8Array(200 * KB) });
    expect(failed.status).toBe(500);
    await waitFor(async () => (await held()) === 0);

    // The client leaves mid-body.
    const leaving = rawRequest(url, head('', 300 * KB));
    leaving.write(Buffer.alloc(150 * KB));
    await waitFor(() => kit.bodyMemory.inUse === 150 * KB);
    leaving.socket.destroy();
    await waitFor(async () => (await held()) === 0);

    // The body stops arriving: 408 after BODY_IDLE_TIMEOUT_MS.
    const idle = rawRequest(url, head('', 300 * KB));
    idle.write(Buffer.alloc(150 * KB));
    await waitFor(() => kit.bodyMemory.inUse === 150 * KB);
    await idle.done;
    expect(idle.status()).toBe(408);
    expect(idle.received()).toContain('No part of the request body arrived for 400 ms');
    await waitFor(async () => (await held()) === 0);

    // The deadline passes while the handler works on the body: 504, given back.
    const late = await fetch(`${url}/raw?wait=3000`, { method: 'POST', body: new Uint8Array(200 * KB) });
    expect(late.status).toBe(504);
    await waitFor(async () => (await held()) === 0);
  }, 30_000);
});

describe("the body's pace", () => {
  it('does not count against the client the time the server itself holds the body paused', async () => {
    // A parser that stops reading for 1 s after the first chunk (as back-pressure from a slow
    // disk does), with BODY_IDLE_TIMEOUT_MS 300: the client is not idle, the server is.
    const pauseOnce: RequestHandler = (req, _res, next) => {
      const chunks: Buffer[] = [];
      req.once('data', () => {
        req.pause();
        setTimeout(() => req.resume(), 1000);
      });
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.once('end', () => {
        req.body = { bytes: Buffer.concat(chunks).length };
        next();
      });
    };
    srv = await startTestServer(
      {
        readiness: ready(),
        routes: [
          defineRoute({
            method: 'post',
            path: '/paused',
            summary: 'paused',
            body: z.object({ bytes: z.number() }),
            bodyParser: [pauseOnce],
            handler: ({ body }) => body,
          }),
        ],
      },
      { BODY_IDLE_TIMEOUT_MS: '300', BODY_MIN_RATE: '1mb' },
    );
    const request = rawRequest(
      srv.url,
      'POST /paused HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: ${String(200 * KB)}\r\n\r\n`,
    );
    request.write(Buffer.alloc(100 * KB, 1));
    await sleep(100);
    request.write(Buffer.alloc(100 * KB, 1));
    await waitFor(() => request.status() !== 0, 5000);
    expect(request.status()).toBe(200);
    expect(request.received()).toContain(`{"bytes":${String(200 * KB)}}`);
  });
});

describe('configuration', () => {
  it('refuses a share larger than the budget, naming both settings', async () => {
    await expect(service({ BODY_MEMORY_LIMIT: '1mb', BODY_MEMORY_SHARE: '2mb' })).rejects.toThrow(
      ConfigError,
    );
    await expect(service({ BODY_MEMORY_LIMIT: '1mb', BODY_MEMORY_SHARE: '2mb' })).rejects.toThrow(
      /BODY_MEMORY_SHARE: must be <= BODY_MEMORY_LIMIT \(1048576 bytes\)/,
    );
  });

  it('defaults: a share of half the budget, 1 KB/s the slowest pace', async () => {
    const { kit } = await service();
    expect(kit.bodyMemory.share).toBe(512 * KB);
    expect(kit.config.BODY_MIN_RATE).toBe(1024);
  });
});
