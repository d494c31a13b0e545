import { afterEach, describe, expect, it } from '@jest/globals';
import { ConcurrencyGate, Readiness, defineRoute } from '@clinicalsuite/kit';
import { type TestServer, deferred, ready, sleep, startTestServer, waitFor } from './helpers.js';

describe('ConcurrencyGate', () => {
  it('admits up to the limit, queues in order, and hands slots over on release', async () => {
    const gate = new ConcurrencyGate({ limit: 2, queueSize: 2, maxWaitMs: 1000 });
    const a = await gate.acquire();
    const b = await gate.acquire();
    const order: string[] = [];
    const c = gate.acquire().then((r) => (order.push('c'), r));
    const d = gate.acquire().then((r) => (order.push('d'), r));
    await expect(gate.acquire()).rejects.toMatchObject({ status: 429 });
    expect([gate.running, gate.waiting]).toEqual([2, 2]);
    a();
    a(); // a second release of the same slot does nothing
    (await c)();
    b();
    (await d)();
    expect(order).toEqual(['c', 'd']);
    expect([gate.running, gate.waiting]).toEqual([0, 0]);
  });

  it('refuses a waiter after maxWaitMs and removes an aborted waiter', async () => {
    const gate = new ConcurrencyGate({ limit: 1, queueSize: 5, maxWaitMs: 50 });
    const held = await gate.acquire();
    const rejected: string[] = [];
    gate.onRejection((r) => rejected.push(r));
    await expect(gate.acquire()).rejects.toMatchObject({ status: 429, headers: { 'retry-after': '1' } });
    const controller = new AbortController();
    const waiting = gate.acquire(controller.signal);
    expect(gate.waiting).toBe(1);
    controller.abort(new Error('client left'));
    await expect(waiting).rejects.toThrow('client left');
    expect(gate.waiting).toBe(0);
    expect(rejected).toEqual(['queue_timeout']);
    held();
  });
});

describe('the gate, readiness and deadlines over a real socket', () => {
  let srv: TestServer | undefined;
  afterEach(async () => {
    await srv?.close();
    srv = undefined;
  });

  it('runs N at once, makes the (N+1)th wait, and refuses the overflow with 429 + Retry-After', async () => {
    const hold = deferred();
    let started = 0;
    const queuedMs: number[] = [];
    srv = await startTestServer(
      {
        routes: [
          defineRoute({
            method: 'post',
            path: '/work',
            summary: 'held work',
            handler: async ({ receivedAt, admittedAt }) => {
              started += 1;
              queuedMs.push(admittedAt - receivedAt);
              await hold.promise;
              return { ok: true };
            },
          }),
        ],
        readiness: ready(),
      },
      { MAX_CONCURRENCY: '2', QUEUE_SIZE: '1' },
    );
    const call = () => fetch(`${srv!.url}/work`, { method: 'POST' });
    const first = [call(), call()];
    await waitFor(() => started === 2);
    const third = call();
    await waitFor(() => srv!.kit.gate.waiting === 1);
    const fourth = await call();
    expect(fourth.status).toBe(429);
    expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await fourth.json()).toEqual({ detail: expect.stringContaining('Too many requests') });
    await sleep(50);
    expect(started).toBe(2); // the third is still waiting, not running
    hold.resolve();
    const statuses = await Promise.all([...first, third].map(async (p) => (await p).status));
    expect(statuses).toEqual([200, 200, 200]);
    expect(started).toBe(3);
    // The handler can tell how long each request queued: only the third waited (50 ms and more).
    expect(queuedMs.slice(0, 2).every((ms) => ms < 50)).toBe(true);
    expect(queuedMs[2]).toBeGreaterThanOrEqual(50);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/clinicalsuite_gate_rejections_total\{reason="queue_full",service="test"\} 1/);
  });

  it('stays shutting down: a part that recovers during the grace period does not make it ready again', () => {
    const readiness = new Readiness();
    readiness.setReady();
    const seen: boolean[] = [];
    readiness.onChange((ready) => seen.push(ready));
    readiness.setShuttingDown();
    readiness.setReady(); // e.g. a reconnected change feed
    readiness.setNotReady('store closed');
    expect([readiness.ready, readiness.reason, seen]).toEqual([false, 'shutting down', [false]]);
  });

  it('answers 503 with the reason on gated routes until ready, and /readyz tells why', async () => {
    const readiness = new Readiness('loading model /models/llm/x.gguf');
    srv = await startTestServer({
      routes: [defineRoute({ method: 'post', path: '/work', summary: 'w', handler: () => ({ ok: true }) })],
      readiness,
    });
    const res = await fetch(`${srv.url}/work`, { method: 'POST' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).not.toBeNull();
    expect(await res.json()).toEqual({ detail: 'Service not ready: loading model /models/llm/x.gguf' });
    const probe = await fetch(`${srv.url}/readyz`);
    expect([probe.status, await probe.json()]).toEqual([
      503,
      { ready: false, reason: 'loading model /models/llm/x.gguf' },
    ]);
    readiness.setReady();
    expect((await fetch(`${srv.url}/work`, { method: 'POST' })).status).toBe(200);
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(200);
  });

  it('answers 504 at the deadline and aborts the handler’s work', async () => {
    let steps = 0;
    let abortedWith: unknown;
    srv = await startTestServer(
      {
        readiness: ready(),
        routes: [
          defineRoute({
            method: 'post',
            path: '/slow',
            summary: 'works in steps until aborted',
            handler: async ({ signal }) => {
              while (!signal.aborted) {
                steps += 1;
                await sleep(10);
              }
              abortedWith = signal.reason;
              return { steps };
            },
          }),
        ],
      },
      { REQUEST_TIMEOUT_MS: '150' },
    );
    const t0 = Date.now();
    const res = await fetch(`${srv.url}/slow`, { method: 'POST' });
    const elapsed = Date.now() - t0;
    expect(res.status).toBe(504);
    expect(await res.json()).toEqual({ detail: 'The request exceeded the 150 ms deadline' });
    expect(elapsed).toBeGreaterThanOrEqual(140);
    expect(elapsed).toBeLessThan(1000);
    await waitFor(() => abortedWith !== undefined);
    expect(abortedWith).toMatchObject({ status: 504 });
    const stepsAtAbort = steps;
    await sleep(60);
    expect(steps).toBe(stepsAtAbort); // the work stopped, not only the response
    await waitFor(() => srv!.kit.gate.running === 0);
  });

  it('counts queue wait against the deadline', async () => {
    const hold = deferred();
    srv = await startTestServer(
      {
        readiness: ready(),
        routes: [
          defineRoute({
            method: 'post',
            path: '/work',
            summary: 'held',
            handler: async ({ signal }) => {
              await Promise.race([hold.promise, new Promise((r) => signal.addEventListener('abort', r))]);
              return { ok: true };
            },
          }),
        ],
      },
      { MAX_CONCURRENCY: '1', REQUEST_TIMEOUT_MS: '200' },
    );
    const first = fetch(`${srv.url}/work`, { method: 'POST' });
    await waitFor(() => srv!.kit.gate.running === 1);
    const queued = await fetch(`${srv.url}/work`, { method: 'POST' });
    expect(queued.status).toBe(504);
    expect((await first).status).toBe(504);
    expect(srv.kit.gate.waiting).toBe(0);
    hold.resolve();
  });
});
