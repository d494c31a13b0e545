/**
 * Opening a kit resource: its starting reason, an open that returns at once, the last failure, and
 * `untilClosed` (a step that cannot be cancelled, or another resource waited for) ending as soon as
 * the service closes.
 */
import { describe, expect, it } from '@jest/globals';
import { createKit, createLogger, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { captureLogs, deferred, sleep, waitFor } from './helpers.js';

function kit() {
  const { destination } = captureLogs();
  const config = loadConfig(kitConfigSchema({ port: 0, maxConcurrency: 1 }), {
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
  });
  return createKit({
    service: 'resource_test',
    title: 'resource test',
    version: '0.0.0',
    config,
    logger: createLogger({ service: 'resource-test', level: 'silent', destination }),
    processMetrics: false,
  });
}

describe('a kit resource', () => {
  it('says its starting reason until it opens; an open may return at once', async () => {
    const k = kit();
    const gate = deferred();
    const store = k.resource({
      name: 'the store',
      startingReason: 'starting: the store is not open yet',
      open: async () => {
        await gate.promise;
        return 'store';
      },
    });
    const clock = k.resource({ name: 'the clock', open: () => 'clock' });
    const app = k.mount([]);
    app.start();
    expect(app.readiness.reason).toBe('starting: the store is not open yet');
    gate.resolve();
    await app.settled();
    expect([store.value, clock.value, app.readiness.ready]).toEqual(['store', 'clock', true]);
    await app.close();
  });

  it('keeps the last failure until it opens', async () => {
    const k = kit();
    let attempts = 0;
    const store = k.resource({
      name: 'the store',
      retry: { firstPauseMs: 10, maxPauseMs: 10 },
      open: () => {
        attempts += 1;
        if (attempts < 3) throw new Error(`disk full (${attempts})`);
        return Promise.resolve('store');
      },
    });
    const app = k.mount([]);
    expect(store.error).toBeUndefined();
    app.start();
    await waitFor(() => store.error !== undefined);
    expect(store.error?.message).toMatch(/^disk full/);
    await store.opened();
    expect(store.error).toBeUndefined();
    await app.close();
  });

  it('does not wait on a step that never ends, and closes what it yields too late', async () => {
    const k = kit();
    const late = deferred<{ closed: boolean }>();
    const store = k.resource({
      name: 'the store',
      open: ({ untilClosed }) =>
        untilClosed(late.promise, (value) => {
          value.closed = true;
        }),
    });
    const app = k.mount([]);
    app.start();
    await sleep(20);
    const t0 = Date.now();
    await app.close();
    expect(Date.now() - t0).toBeLessThan(200);
    expect(store.value).toBeUndefined();
    await expect(store.opened()).rejects.toThrow(/closed/);
    const value = { closed: false };
    late.resolve(value);
    await waitFor(() => value.closed);
  });

  it('waits for another resource, and stops waiting when the service closes first', async () => {
    const k = kit();
    const storeOpens = deferred<string>();
    const store = k.resource({
      name: 'the store',
      open: ({ untilClosed }) => untilClosed(storeOpens.promise),
    });
    const workers = k.resource({
      name: 'the workers',
      open: async ({ untilClosed }) => `workers on ${await untilClosed(store.opened())}`,
    });
    const app = k.mount([]);
    app.start();
    await sleep(20);
    expect(workers.value).toBeUndefined();
    storeOpens.resolve('sqlite');
    await app.settled();
    expect(workers.value).toBe('workers on sqlite');
    await app.close();

    const k2 = kit();
    const never = k2.resource({
      name: 'the store',
      open: ({ untilClosed }) => untilClosed(new Promise<string>(() => undefined)),
    });
    const after = k2.resource({
      name: 'the workers',
      open: async ({ untilClosed }) => untilClosed(never.opened()),
    });
    const app2 = k2.mount([]);
    app2.start();
    await sleep(20);
    await app2.close();
    await expect(after.opened()).rejects.toThrow(/closed/);
    expect(app2.readiness.reason).toBe('shutting down');
  });
});
