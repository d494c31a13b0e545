import { describe, expect, it } from '@jest/globals';
import {
  createKit,
  createLogger,
  kitConfigSchema,
  loadConfig,
  type Kit,
  type OpenContext,
} from '@clinicalsuite/kit';
import { captureLogs } from './helpers.js';

// Kit resources: opened when the service starts, reopened with growing pauses when they go down,
// optional ones kept out of the service's readiness.

function testKit(): { kit: Kit; logs: Record<string, unknown>[] } {
  const config = loadConfig(kitConfigSchema({ port: 0, maxConcurrency: 1 }), {
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
  });
  const { logs, destination } = captureLogs();
  const kit = createKit({
    service: 'test',
    title: 'Test',
    version: '0.0.0',
    config,
    logger: createLogger({ service: 'test', level: 'debug', destination }),
    processMetrics: false,
  });
  return { kit, logs };
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('kit resources', () => {
  it('opens again what went down, after pauses that grow while it keeps going down, and closes each', async () => {
    const { kit, logs } = testKit();
    let opens = 0;
    const closed: number[] = [];
    let ctx: OpenContext | undefined;
    const child = kit.resource({
      name: 'the child',
      open: (c) => {
        ctx = c;
        opens++;
        return Promise.resolve(opens);
      },
      close: (n) => {
        closed.push(n);
      },
      retry: { firstPauseMs: 20, maxPauseMs: 40 },
      failureReason: (error, retryInMs) => `${error.message}; again in ${String(retryInMs)} ms`,
    });
    const app = kit.mount([]);
    app.start();
    await child.opened();
    expect(app.readiness.ready).toBe(true);
    for (const pause of [20, 40, 40]) {
      const before = opens;
      const lost = ctx as OpenContext;
      lost.lost(new Error('it exited'));
      lost.lost(new Error('said twice'));
      expect(child.state).toBe('failed');
      expect(app.readiness.reason).toBe(`it exited; again in ${String(pause)} ms`);
      await until(() => child.state === 'ready');
      expect(opens).toBe(before + 1);
    }
    expect(closed).toEqual([1, 2, 3]);
    expect(logs.filter((l) => typeof l['retryInMs'] === 'number').map((l) => l['retryInMs'])).toEqual([
      20, 40, 40,
    ]);
    await app.close();
    expect(closed).toEqual([1, 2, 3, 4]);
    expect(child.state).toBe('stopped');
  });

  it('stays failed when something without retry goes down', async () => {
    const { kit } = testKit();
    let ctx: OpenContext | undefined;
    const closed: string[] = [];
    const once = kit.resource({
      name: 'the engine',
      open: (c) => {
        ctx = c;
        return Promise.resolve('engine');
      },
      close: (v) => {
        closed.push(v);
      },
    });
    const app = kit.mount([]);
    app.start();
    await once.opened();
    ctx?.lost(new Error('crashed'));
    expect(once.state).toBe('failed');
    expect(once.value).toBeUndefined();
    expect(app.readiness.reason).toBe('the engine went down: crashed');
    await once.settled();
    expect(closed).toEqual(['engine']);
    await app.close();
    expect(closed).toEqual(['engine']);
  });

  it('keeps an optional resource out of the readiness, and says when the first try ended', async () => {
    const { kit } = testKit();
    const missing = kit.resource({
      name: 'the extra model',
      optional: true,
      open: () => Promise.reject(new Error('no such file')),
      retry: { firstPauseMs: 60_000 },
    });
    const app = kit.mount([]);
    expect(app.readiness.ready).toBe(false);
    app.start();
    await missing.attempted();
    expect(missing.state).toBe('failed');
    expect(missing.reason).toBe('the extra model failed to open: no such file');
    expect(app.readiness.ready).toBe(true);
    await app.close();
    await expect(missing.opened()).rejects.toThrow(/closed before it opened/);
  });
});
