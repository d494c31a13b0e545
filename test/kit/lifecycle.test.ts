/**
 * The kit's lifecycle (docs/architecture.md, "How a service is assembled"): readiness as the
 * conjunction of conditions, resources opened after listening (retried, aborted, closed in
 * reverse order), and serve() starting and closing them over a real socket.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  createKit,
  createLogger,
  defineRoute,
  kitConfigSchema,
  loadConfig,
  Readiness,
  Resource,
  serve,
  ServiceUnavailableError,
  type Disposable,
  type Kit,
  type KitOptions,
  type OpenContext,
  type ReadinessSignal,
  type RunningServer,
} from '@clinicalsuite/kit';
import { captureLogs, deferred, sleep, waitFor } from './helpers.js';

function quietLogger() {
  const { logs, destination } = captureLogs();
  return { logs, logger: createLogger({ service: 'test', level: 'debug', destination }) };
}

function testKit(options: Partial<KitOptions> = {}): { kit: Kit; logs: Record<string, unknown>[] } {
  const config = loadConfig(kitConfigSchema({ port: 0, maxConcurrency: 2 }), {
    HOST: '127.0.0.1',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    SHUTDOWN_GRACE_MS: '2000',
  });
  const { logs, logger } = quietLogger();
  const kit = createKit({
    service: 'test',
    title: 'Lifecycle test',
    version: '1.0.0',
    config,
    logger,
    processMetrics: false,
    ...options,
  });
  return { kit, logs };
}

/** A resource on its own condition of a fresh readiness. */
function resourceOf<T>(spec: ConstructorParameters<typeof Resource<T>>[0]) {
  const readiness = new Readiness();
  readiness.setReady();
  const condition = readiness.condition(`starting: ${spec.name}`);
  const { logs, logger } = quietLogger();
  return { resource: new Resource<T>(spec, condition, logger), readiness, condition, logs };
}

describe('Readiness conditions', () => {
  it('is ready only when every condition is, and names the first unmet in order of creation', () => {
    const readiness = new Readiness('booting');
    const changes: boolean[] = [];
    readiness.onChange((ready) => changes.push(ready));
    const a = readiness.condition('a is waiting');
    const b = readiness.condition('b is waiting');
    expect(readiness.reason).toBe('booting');

    readiness.setReady();
    expect(readiness.ready).toBe(false);
    expect(readiness.reason).toBe('a is waiting');

    b.setReady();
    expect(readiness.ready).toBe(false);
    expect(readiness.reason).toBe('a is waiting');

    a.setReady();
    expect(readiness.ready).toBe(true);
    expect(readiness.reason).toBeUndefined();

    b.setNotReady('b went down');
    expect(readiness.reason).toBe('b went down');
    a.setNotReady('a went down');
    expect(readiness.reason).toBe('a went down');
    readiness.setNotReady('the service itself');
    expect(readiness.reason).toBe('the service itself');

    readiness.setReady();
    a.setReady();
    b.setReady();
    expect(readiness.ready).toBe(true);
    // One call per transition of the whole, not per condition.
    expect(changes).toEqual([true, false, true]);
  });

  it('counts a condition made without a reason as met', () => {
    const readiness = new Readiness();
    readiness.setReady();
    const c = readiness.condition();
    expect(c.ready).toBe(true);
    expect(readiness.ready).toBe(true);
  });

  it('stays not ready, "shutting down", whatever the conditions say after setShuttingDown', () => {
    const readiness = new Readiness();
    const c = readiness.condition('waiting');
    const changes: boolean[] = [];
    readiness.onChange((ready) => changes.push(ready));
    readiness.setReady();
    c.setReady();
    expect(readiness.ready).toBe(true);

    readiness.setShuttingDown();
    expect(readiness.ready).toBe(false);
    expect(readiness.isShuttingDown).toBe(true);
    expect(readiness.reason).toBe('shutting down');

    c.setNotReady('down');
    c.setReady();
    readiness.setNotReady('something');
    readiness.setReady();
    readiness.condition().setReady();
    expect(readiness.ready).toBe(false);
    expect(readiness.reason).toBe('shutting down');
    expect(changes).toEqual([true, false]);
  });
});

describe('Resource', () => {
  it('answers require() with 503 and the reason until it is open, and the value after', async () => {
    const gate = deferred();
    const { resource, readiness } = resourceOf<{ n: number }>({
      name: 'the store',
      open: async ({ opening }) => {
        opening('the store is replaying its log');
        await gate.promise;
        return { n: 7 };
      },
    });
    expect(resource.state).toBe('waiting');
    expect(() => resource.require()).toThrow(ServiceUnavailableError);
    expect(() => resource.require()).toThrow('The store is not open: starting: the store');

    resource.start();
    resource.start(); // idempotent: one open
    await waitFor(() => resource.state === 'opening');
    expect(readiness.reason).toBe('the store is replaying its log');
    let thrown: unknown;
    try {
      resource.require();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ServiceUnavailableError);
    expect(thrown).toMatchObject({
      status: 503,
      message: 'The store is not open: the store is replaying its log',
    });
    expect(resource.value).toBeUndefined();

    gate.resolve();
    await expect(resource.opened()).resolves.toEqual({ n: 7 });
    expect(resource.state).toBe('ready');
    expect(readiness.ready).toBe(true);
    expect(resource.require()).toEqual({ n: 7 });

    await resource.close();
    expect(resource.state).toBe('stopped');
    expect(resource.value).toBeUndefined();
    expect(() => resource.require()).toThrow(ServiceUnavailableError);
  });

  it('retries a failed open with a pause that doubles up to its cap, not ready with the error meanwhile', async () => {
    const attempts: number[] = [];
    const reasons: (string | undefined)[] = [];
    const seen: { condition?: ReadinessSignal } = {};
    const { resource, readiness, condition } = resourceOf<string>({
      name: 'the store',
      retry: { firstPauseMs: 60, maxPauseMs: 150 },
      open: () => {
        attempts.push(performance.now());
        // The reason the previous failure left, as the next attempt begins.
        reasons.push(seen.condition?.reason);
        if (attempts.length <= 4) return Promise.reject(new Error(`refused ${attempts.length}`));
        return Promise.resolve('open');
      },
    });
    seen.condition = condition;
    resource.start();
    await waitFor(() => resource.state === 'failed');
    expect(readiness.reason).toBe('the store failed to open: refused 1');
    expect(() => resource.require()).toThrow('The store is not open: the store failed to open: refused 1');

    await expect(resource.opened()).resolves.toBe('open');
    expect(attempts).toHaveLength(5);
    expect(reasons.slice(1)).toEqual([
      'the store failed to open: refused 1',
      'the store failed to open: refused 2',
      'the store failed to open: refused 3',
      'the store failed to open: refused 4',
    ]);
    const gaps = attempts.slice(1).map((t, i) => t - (attempts[i] ?? 0));
    // 60, 120, then capped at 150 (uncapped the last would be 480).
    expect(gaps[0]).toBeGreaterThanOrEqual(55);
    expect(gaps[1]).toBeGreaterThanOrEqual(115);
    expect(gaps[2]).toBeGreaterThanOrEqual(145);
    expect(gaps[3]).toBeGreaterThanOrEqual(145);
    expect(gaps[3]).toBeLessThan(400);
    expect(readiness.ready).toBe(true);
    await resource.close();
  });

  it('uses the failure reason the resource gives', async () => {
    const { resource, readiness } = resourceOf<string>({
      name: 'the index',
      open: () => Promise.reject(new Error('no such table')),
      failureReason: (error) => `the index is unreadable (${error.message}): run the importer`,
    });
    resource.start();
    await resource.settled();
    expect(readiness.reason).toBe('the index is unreadable (no such table): run the importer');
  });

  it('without retry, a failed open leaves it not ready with the error, and tries once', async () => {
    let calls = 0;
    const { resource, readiness, logs } = resourceOf<string>({
      name: 'the engine',
      open: () => {
        calls += 1;
        return Promise.reject(new Error('missing library libfoo.so'));
      },
    });
    resource.start();
    await expect(resource.opened()).rejects.toThrow('missing library libfoo.so');
    await resource.settled();
    expect(resource.state).toBe('failed');
    expect(readiness.ready).toBe(false);
    expect(readiness.reason).toBe('the engine failed to open: missing library libfoo.so');
    await sleep(300);
    expect(calls).toBe(1);
    expect(logs.some((l) => l['level'] === 'error' && l['msg'] === 'the engine failed to open')).toBe(true);
    await resource.close();
    expect(resource.state).toBe('stopped');
  });

  it('aborts an open in progress on close, and disposes what the open returns late', async () => {
    const late = deferred<{ id: string }>();
    const disposed: string[] = [];
    const started = deferred<OpenContext>();
    const { resource } = resourceOf<{ id: string }>({
      name: 'the engine',
      // An open that does not watch its signal: what it returns after close must still be freed.
      open: (c) => {
        started.resolve(c);
        return late.promise;
      },
      close: (value) => {
        disposed.push(value.id);
      },
    });
    resource.start();
    const ctx = await started.promise;
    expect(ctx.signal.aborted).toBe(false);

    let closed = false;
    const closing = resource.close().then(() => {
      closed = true;
    });
    expect(ctx.signal.aborted).toBe(true);
    await sleep(20);
    expect(closed).toBe(false); // close waits for the open to end

    // A late progress report does not bring a closed resource back to life.
    ctx.opening('loading the engine');
    late.resolve({ id: 'late engine' });
    await closing;
    expect(disposed).toEqual(['late engine']);
    expect(resource.value).toBeUndefined();
    expect(resource.state).toBe('stopped');
    await expect(resource.opened()).rejects.toThrow('the engine was closed before it opened');
    expect(() => resource.require()).toThrow(ServiceUnavailableError);
  });

  it('stops retrying on close, without waiting out the pause', async () => {
    let calls = 0;
    const { resource } = resourceOf<string>({
      name: 'the store',
      retry: { firstPauseMs: 60_000 },
      open: () => {
        calls += 1;
        return Promise.reject(new Error('refused'));
      },
    });
    resource.start();
    await waitFor(() => resource.state === 'failed');
    const started = performance.now();
    await resource.close();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(calls).toBe(1);
    expect(resource.state).toBe('stopped');
    await expect(resource.opened()).rejects.toThrow('closed before it opened');
  });

  it('never opens once closed', async () => {
    let calls = 0;
    const { resource } = resourceOf<string>({
      name: 'the store',
      open: () => {
        calls += 1;
        return Promise.resolve('open');
      },
    });
    await resource.close();
    resource.start();
    await resource.settled();
    expect(calls).toBe(0);
    expect(resource.state).toBe('stopped');
    expect(resource.value).toBeUndefined();
    await expect(resource.opened()).rejects.toThrow('closed before it opened');
  });

  it('closes what is open once, however often close is called', async () => {
    let closes = 0;
    const { resource } = resourceOf<string>({
      name: 'the store',
      open: () => Promise.resolve('open'),
      close: async () => {
        await sleep(10);
        closes += 1;
      },
    });
    resource.start();
    await resource.opened();
    await Promise.all([resource.close(), resource.close()]);
    await resource.close();
    expect(closes).toBe(1);
  });
});

describe('Kit resources', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('closes resources, models and owned values in reverse order of declaration', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kit-lifecycle-'));
    const modelPath = join(dir, 'model.bin');
    writeFileSync(modelPath, 'weights');
    const { kit, logs } = testKit();
    const closed: string[] = [];
    kit.resource({ name: 'first', open: () => Promise.resolve('a'), close: () => void closed.push('first') });
    kit.model<Disposable>({
      modelPaths: [modelPath],
      pollMs: 20,
      hint: 'put it there',
      load: () => Promise.resolve({ dispose: () => Promise.resolve(void closed.push('model')) }),
    });
    kit.own('handle', () => {
      closed.push('owned');
      throw new Error('owned value failed to close');
    });
    kit.resource({ name: 'last', open: () => Promise.resolve('d'), close: () => void closed.push('last') });
    const app = kit.mount([]);
    app.start();
    await app.settled();
    expect(app.readiness.ready).toBe(true);

    await Promise.all([app.close(), app.close()]);
    // A close that fails is logged and does not stop the others.
    expect(closed).toEqual(['last', 'owned', 'model', 'first']);
    expect(logs.some((l) => l['msg'] === 'a resource failed to close')).toBe(true);
    expect(app.readiness.reason).toBe('shutting down');
  });

  it('is ready when every resource is, and names the first that is not', async () => {
    const { kit } = testKit();
    const store = deferred<string>();
    const index = deferred<string>();
    kit.resource({ name: 'the store', open: () => store.promise });
    kit.resource({ name: 'the index', open: () => index.promise });
    const app = kit.mount([]);
    expect(app.readiness.reason).toBe('starting');
    app.start();
    expect(app.readiness.reason).toBe('starting: the store opens after the server listens');
    index.resolve('index');
    await sleep(10);
    expect(app.readiness.reason).toBe('starting: the store opens after the server listens');
    store.resolve('store');
    await app.settled();
    expect(app.readiness.ready).toBe(true);
    await app.close();
  });

  it('waits for a model file, naming it and the hint, and loads it once it appears', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kit-lifecycle-'));
    const modelPath = join(dir, 'model.gguf');
    const { kit } = testKit();
    const host = kit.model<Disposable & { path: string }>({
      modelPaths: [modelPath],
      pollMs: 20,
      hint: 'run `npm run models -- fetch test`',
      load: ([path]) => Promise.resolve({ path: path ?? '', dispose: () => Promise.resolve() }),
    });
    const app = kit.mount([]);
    app.start();
    await waitFor(() => app.readiness.reason?.startsWith('model file not found') === true);
    expect(app.readiness.reason).toBe(
      `model file not found: ${modelPath} — run \`npm run models -- fetch test\``,
    );
    expect(host.state).toBe('waiting');
    expect(() => host.require()).toThrow(ServiceUnavailableError);
    writeFileSync(modelPath, 'weights');
    await expect(host.opened()).resolves.toMatchObject({ path: modelPath });
    expect(host.state).toBe('ready');
    expect(app.readiness.ready).toBe(true);
    await app.close();
    expect(host.state).toBe('stopped');
  });

  it('mounts once, and refuses a resource declared after mount (it would never open)', () => {
    const { kit } = testKit();
    kit.mount([]);
    expect(() => kit.mount([])).toThrow('a kit mounts its routes once');
    expect(() => kit.resource({ name: 'late', open: () => Promise.resolve(1) })).toThrow(/before mount/);
    expect(() => kit.own(1, () => undefined)).toThrow(/before mount/);
  });
});

describe('Kit helpers', () => {
  it('runs an `every` task at its interval from start to close, logging a throw and going on', async () => {
    const { kit, logs } = testKit();
    let runs = 0;
    const sweeper = kit.every('the sweeper', 10, () => {
      runs += 1;
      if (runs === 2) throw new Error('sweep failed');
    });
    const app = kit.mount([]);
    await sleep(40);
    expect(runs).toBe(0); // nothing runs before start
    app.start();
    await app.settled();
    expect(sweeper.state).toBe('ready');
    await waitFor(() => runs >= 4);
    expect(logs).toContainEqual(
      expect.objectContaining({ msg: 'the sweeper failed', resource: 'the sweeper', level: 'error' }),
    );
    await app.close();
    const after = runs;
    await sleep(40);
    expect(runs).toBe(after);
    expect(sweeper.state).toBe('stopped');
  });

  it('starts a `background` worker after start and stops it on close, in order with the resources', async () => {
    const { kit } = testKit();
    const events: string[] = [];
    kit.resource({ name: 'the store', open: () => 'store', close: () => void events.push('close store') });
    const worker = { start: () => void events.push('start'), stop: () => void events.push('stop') };
    expect(kit.background('the monitor', worker)).toBe(worker);
    kit.resource({ name: 'the index', open: () => 'index', close: () => void events.push('close index') });
    const app = kit.mount([]);
    expect(events).toEqual([]);
    app.start();
    await app.settled();
    expect(events).toEqual(['start']);
    expect(app.readiness.ready).toBe(true);
    await app.close();
    expect(events).toEqual(['start', 'close index', 'stop', 'close store']);
  });

  it('opens an app without serve(): `open()` starts the resources and resolves once they settled', async () => {
    const { kit } = testKit();
    const store = deferred<string>();
    const opened: string[] = [];
    kit.resource({ name: 'the store', open: () => store.promise.then((v) => void opened.push(v)) });
    kit.resource({
      name: 'the engine',
      open: () => Promise.reject(new Error('no engine here')),
    });
    const app = kit.mount([]);
    let done = false;
    const opening = app.open().then(() => (done = true));
    await sleep(20);
    expect(done).toBe(false); // the store is still opening
    store.resolve('store');
    await opening;
    expect(opened).toEqual(['store']);
    expect(app.readiness.reason).toBe('the engine failed to open: no engine here');
    await app.open(); // once started, open() only waits
    await app.close();
  });

  it('trusts X-Forwarded-* only from the proxies `trustProxy` names', async () => {
    const whoRoute = defineRoute({
      method: 'get',
      path: '/who',
      summary: 'the client address and scheme as the app sees them',
      response: z.object({ ip: z.string(), secure: z.boolean() }),
      handler: ({ req }) => ({ ip: req.ip ?? '', secure: req.secure }),
    });
    const headers = { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' };
    for (const [options, expected] of [
      [{}, { ip: '127.0.0.1', secure: false }],
      [{ trustProxy: 'loopback' }, { ip: '203.0.113.7', secure: true }],
      [{ trustProxy: ['10.0.0.0/8'] }, { ip: '127.0.0.1', secure: false }],
    ] as const) {
      const server = await serve(testKit(options).kit.mount([whoRoute]), { signals: [], exit: false });
      try {
        const res = await fetch(`${server.url}/who`, { headers });
        expect(await res.json()).toEqual(expected);
      } finally {
        await server.shutdown('test');
      }
    }
  });
});

describe('serve() and the lifecycle', () => {
  let running: RunningServer | undefined;
  afterEach(async () => {
    await running?.shutdown('test finished');
    running = undefined;
  });

  it('opens resources after listening, answers 503 with the reason meanwhile, and closes them on shutdown', async () => {
    const { kit } = testKit();
    const events: string[] = [];
    const release = deferred();
    const store = kit.resource<{ get(key: string): string }>({
      name: 'the store',
      open: async ({ opening }) => {
        events.push('open');
        opening('the store is replaying its log');
        await release.promise;
        return { get: (key) => `value of ${key}` };
      },
      close: () => void events.push('close store'),
    });
    kit.own('socket', () => void events.push('close owned'));
    const app = kit.mount([
      defineRoute({
        method: 'get',
        path: '/value/:key',
        summary: 'a value from the store',
        params: z.object({ key: z.string() }),
        response: z.object({ value: z.string() }),
        handler: ({ params }) => ({ value: store.require().get(params.key) }),
      }),
    ]);
    expect(events).toEqual([]); // nothing opens before listening

    running = await serve(app, { signals: [], exit: false });
    await waitFor(() => events.includes('open'));
    const notReady = await fetch(`${running.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ ready: false, reason: 'the store is replaying its log' });

    const early = await fetch(`${running.url}/value/x`);
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('5');
    expect(await early.json()).toMatchObject({
      detail: 'The store is not open: the store is replaying its log',
    });

    release.resolve();
    await app.settled();
    const readyRes = await fetch(`${running.url}/readyz`);
    expect(readyRes.status).toBe(200);
    expect(await readyRes.json()).toEqual({ ready: true });
    expect(await (await fetch(`${running.url}/value/x`)).json()).toEqual({ value: 'value of x' });

    const server = running;
    running = undefined;
    await server.shutdown('test');
    expect(events).toEqual(['open', 'close owned', 'close store']);
    expect(app.readiness.reason).toBe('shutting down');
    expect(server.server.listening).toBe(false);
    await expect(fetch(`${server.url}/livez`)).rejects.toThrow();
  });

  it('shuts down while a resource is still opening: the open is aborted and nothing leaks', async () => {
    const { kit } = testKit();
    let aborted = false;
    kit.resource<string>({
      name: 'the engine',
      open: ({ signal }) =>
        new Promise<string>((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
        }),
    });
    const app = kit.mount([]);
    const server = await serve(app, { signals: [], exit: false });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    await server.shutdown('test');
    expect(aborted).toBe(true);
    expect(server.server.listening).toBe(false);
  });
});
