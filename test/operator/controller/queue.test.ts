import { describe, expect, it } from '@jest/globals';
import { WorkQueue } from '../../../operator/src/controller/queue.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('WorkQueue', () => {
  it('de-duplicates waiting keys and keeps arrival order', async () => {
    const q = new WorkQueue();
    q.add('ns/a');
    q.add('ns/b');
    q.add('ns/a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('ns/a');
    expect(await q.get()).toBe('ns/b');
  });

  it('never hands one key to two workers; a key added while in process runs again after', async () => {
    const q = new WorkQueue();
    q.add('k');
    const key = await q.get();
    q.add('k'); // an event arrives while a worker holds it
    expect(q.length).toBe(0);
    let second: string | undefined;
    void q.get().then((k) => (second = k));
    await sleep(5);
    expect(second).toBeUndefined();
    q.done(key!);
    await sleep(0);
    expect(second).toBe('k');
  });

  it('backs off per key exponentially, capped, and forget resets it', () => {
    const q = new WorkQueue({ baseDelayMs: 5, maxDelayMs: 1000 });
    expect([0, 1, 2, 3, 10].map((f) => q.backoffMs(f))).toEqual([5, 10, 20, 40, 1000]);
    q.addRateLimited('k');
    q.addRateLimited('k');
    expect(q.failuresOf('k')).toBe(2);
    q.forget('k');
    expect(q.failuresOf('k')).toBe(0);
    q.shutdown();
  });

  it('delivers a rate-limited key after its delay, keeping the earliest schedule', async () => {
    const q = new WorkQueue({ baseDelayMs: 30 });
    q.addAfter('k', 1000);
    q.addRateLimited('k'); // 30 ms: earlier, replaces the 1 s schedule
    const t0 = performance.now();
    expect(await q.get()).toBe('k');
    const waited = performance.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(25);
    expect(waited).toBeLessThan(500);
    q.shutdown();
  });

  it('wakes waiting workers with undefined on shutdown', async () => {
    const q = new WorkQueue();
    const pending = q.get();
    q.shutdown();
    expect(await pending).toBeUndefined();
    q.add('late');
    expect(q.length).toBe(0);
  });
});
