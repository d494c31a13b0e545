import { describe, expect, it } from '@jest/globals';
import { estimateTokens, fitHistory, SessionStore } from '../../services/agent/src/domain/sessions.js';
import { upstreamOrder } from '../../services/agent/src/domain/routing.js';
import type { ChatMessage } from '../../services/agent/src/domain/types.js';
import { UPSTREAM_IDS } from '../../services/agent/src/domain/types.js';

const msg = (role: ChatMessage['role'], n: number, fill = 'a'): ChatMessage => ({
  role,
  content: fill.repeat(n),
});

describe('SessionStore', () => {
  it('forgets a session idle past its TTL, and counts it', () => {
    const ended: string[] = [];
    const store = new SessionStore(1000, 10, 100, (r) => ended.push(r));
    store.open('a', 0);
    expect(store.get('a', 1000)).toBeDefined();
    expect(store.get('a', 2001)).toBeUndefined();
    expect(ended).toEqual(['expired']);
    expect(store.size).toBe(0);
  });

  it('keeps a used session alive: the TTL runs from the last use', () => {
    const store = new SessionStore(1000, 10, 100);
    const { session } = store.open('a', 0);
    store.record(session, [{ role: 'user', content: 'x', timestamp: 900 }], 900);
    expect(store.get('a', 1800)).toBeDefined();
    expect(store.open('a', 1800).created).toBe(false);
    expect(store.get('a', 2700)).toBeDefined();
  });

  it('tells a turn whether the session it began on was deleted since, not when evicted or expired', () => {
    const store = new SessionStore(1000, 1, 100);
    const a = store.open('a', 0).session;
    expect(store.wasDeleted(a)).toBe(false);
    expect(store.wasDeleted(undefined)).toBe(false);
    expect(store.delete('a')).toBe(true);
    expect(store.wasDeleted(a)).toBe(true);
    expect(store.delete('a')).toBe(false);
    // A new session under the same id is another conversation: not deleted.
    const again = store.open('a', 1).session;
    expect(store.wasDeleted(again)).toBe(false);
    store.open('b', 2); // evicts a (cap 1)
    expect(store.get('a', 2)).toBeUndefined();
    expect(store.wasDeleted(again)).toBe(false);
  });

  it('drops the least recently used session past the cap', () => {
    const ended: string[] = [];
    const store = new SessionStore(60_000, 2, 100, (r) => ended.push(r));
    store.open('a', 0);
    store.open('b', 1);
    store.open('a', 2); // a is now the most recent
    store.open('c', 3);
    expect(store.get('b', 4)).toBeUndefined();
    expect(store.get('a', 4)).toBeDefined();
    expect(store.get('c', 4)).toBeDefined();
    expect(ended).toEqual(['evicted']);
  });

  it('keeps the newest messages per session', () => {
    const store = new SessionStore(60_000, 10, 4);
    const { session } = store.open('a', 0);
    for (let i = 0; i < 3; i++) {
      store.record(
        session,
        [
          { role: 'user', content: `q${i}`, timestamp: i },
          { role: 'assistant', content: `r${i}`, timestamp: i, intent: 'chat', model: 'alpha4_service' },
        ],
        i,
      );
    }
    expect(session.messages.map((m) => m.content)).toEqual(['q1', 'r1', 'q2', 'r2']);
    expect(session.lastIntent).toBe('chat');
    expect(session.lastModel).toBe('alpha4_service');
  });

  it('lists live sessions most recent first and sweeps the expired', () => {
    const store = new SessionStore(1000, 10, 10);
    store.open('old', 0);
    store.open('mid', 500);
    store.open('new', 1200);
    expect(store.list(1400).map((s) => s.id)).toEqual(['new', 'mid']);
    expect(store.sweep(5000)).toBe(2);
  });

  it('a recorded exchange makes the session the most recent: the list never shows an expired one', () => {
    const store = new SessionStore(1000, 10, 100);
    const a = store.open('a', 0).session; // a turn on a starts at t=0, its LLM call is slow
    const b = store.open('b', 10).session;
    store.record(b, [{ role: 'user', content: 'b', timestamp: 10 }], 10);
    store.record(a, [{ role: 'user', content: 'a', timestamp: 500 }], 500); // a's call ends at t=500
    // At t=1200 b (idle 1190 ms) is past the TTL, a (idle 700 ms) is not.
    expect(store.list(1200).map((s) => s.id)).toEqual(['a']);
    expect(store.get('b', 1200)).toBeUndefined();
  });

  it('a recorded exchange protects the session from eviction as the least recently used', () => {
    const store = new SessionStore(60_000, 2, 100);
    const a = store.open('a', 0).session;
    store.open('b', 1);
    store.record(a, [{ role: 'user', content: 'x', timestamp: 2 }], 2);
    store.open('c', 3);
    expect(store.get('a', 4)).toBeDefined();
    expect(store.get('b', 4)).toBeUndefined();
  });

  it('peek reads a live session without using it, and never an expired one', () => {
    const ended: string[] = [];
    const store = new SessionStore(1000, 10, 100, (r) => ended.push(r));
    store.open('a', 0);
    store.open('b', 10);
    expect(store.peek('a', 500)?.id).toBe('a');
    expect(store.peek('a', 500)?.updatedAt).toBe(0);
    expect(store.list(500).map((s) => s.id)).toEqual(['b', 'a']); // order unchanged
    expect(store.peek('a', 1001)).toBeUndefined();
    expect(store.peek('missing', 0)).toBeUndefined();
    expect(store.size).toBe(2);
    expect(ended).toEqual([]);
  });

  it('a session deleted while its turn ran stays deleted', () => {
    const store = new SessionStore(60_000, 10, 100);
    const a = store.open('a', 0).session;
    store.delete('a');
    store.record(a, [{ role: 'user', content: 'x', timestamp: 1 }], 1);
    expect(store.get('a', 2)).toBeUndefined();
  });
});

describe('fitHistory', () => {
  const system = [msg('system', 30)];
  it('keeps everything that fits', () => {
    const history = [msg('user', 30), msg('assistant', 30)];
    const fit = fitHistory(system, history, [msg('user', 30)], 4096, 1024);
    expect(fit).toMatchObject({ dropped: 0 });
    expect('kept' in fit && fit.kept).toHaveLength(2);
  });

  it('drops the oldest exchanges first and never starts with a reply', () => {
    // Each history message costs 300 bytes / 3 + 6 = 106 tokens.
    const history = [msg('user', 300), msg('assistant', 300), msg('user', 300), msg('assistant', 300)];
    const current = [msg('user', 30)];
    const fixed = estimateTokens(system[0]!) + estimateTokens(current[0]!);
    // Room for three history messages: the oldest user message goes, then its orphaned reply.
    const fit = fitHistory(system, history, current, 1000 + fixed + 3 * 106, 1000);
    if (!('kept' in fit)) throw new Error('expected a fit');
    expect(fit.dropped).toBe(2);
    expect(fit.kept.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(fit.promptTokens).toBe(fixed + 2 * 106);
  });

  it('says by how much a message that cannot fit is over', () => {
    const fit = fitHistory(system, [], [msg('user', 3000)], 1024, 512);
    expect(fit).toEqual({ overBy: estimateTokens(system[0]!) + estimateTokens(msg('user', 3000)) - 512 });
  });

  it('counts Vietnamese by its UTF-8 bytes (more tokens than the same number of ASCII letters)', () => {
    expect(estimateTokens({ role: 'user', content: 'đau đầu' })).toBeGreaterThan(
      estimateTokens({ role: 'user', content: 'dau dau' }),
    );
  });
});

describe('upstreamOrder', () => {
  it('sends general intents to alpha4 then its fallback beta, code and debug to beta3 first', () => {
    expect(upstreamOrder('chat', null, UPSTREAM_IDS)).toEqual([
      'alpha4_service',
      'beta_service',
      'beta3_service',
    ]);
    expect(upstreamOrder('code', null, UPSTREAM_IDS)).toEqual([
      'beta3_service',
      'alpha4_service',
      'beta_service',
    ]);
    expect(upstreamOrder('debug', null, UPSTREAM_IDS)[0]).toBe('beta3_service');
  });

  it('puts a forced upstream first and keeps the others as fallbacks; only configured ones', () => {
    expect(upstreamOrder('chat', 'beta3_service', UPSTREAM_IDS)).toEqual([
      'beta3_service',
      'alpha4_service',
      'beta_service',
    ]);
    expect(upstreamOrder('code', null, ['alpha4_service', 'beta_service'])).toEqual([
      'alpha4_service',
      'beta_service',
    ]);
  });
});
