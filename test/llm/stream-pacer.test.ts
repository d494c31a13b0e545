import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { StreamPacer } from '../../services/llm/src/routes/stream-pacer.js';

// The pacer on jest's fake clock: performance.now() and setTimeout move together.

describe('StreamPacer', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  const pacer = (intervalMs: number): { writes: [number, string][]; pacer: StreamPacer } => {
    const writes: [number, string][] = [];
    const p = new StreamPacer(
      intervalMs,
      (text) => writes.push([Date.now(), text]),
      () => Date.now(),
    );
    return { writes, pacer: p };
  };

  it('writes the first text at once, then at most once per interval with what came meanwhile', () => {
    const { writes, pacer: p } = pacer(40);
    p.push('Hello');
    jest.advanceTimersByTime(15);
    p.push(',');
    jest.advanceTimersByTime(15);
    p.push(' world');
    p.push('');
    expect(writes).toEqual([[0, 'Hello']]);
    jest.advanceTimersByTime(10);
    expect(writes).toEqual([
      [0, 'Hello'],
      [40, ', world'],
    ]);
    // A piece after a quiet spell longer than the interval goes out at once.
    jest.advanceTimersByTime(100);
    p.push('!');
    expect(writes.at(-1)).toEqual([140, '!']);
    expect(writes.map(([, text]) => text).join('')).toBe('Hello, world!');
  });

  it('sends what it holds on flush, before the stream ends, and nothing after a cancel', () => {
    const { writes, pacer: p } = pacer(40);
    p.push('a');
    jest.advanceTimersByTime(5);
    p.push('b');
    p.flush();
    expect(writes).toEqual([
      [0, 'a'],
      [5, 'b'],
    ]);
    jest.advanceTimersByTime(100);
    expect(writes).toHaveLength(2);
    p.push('c');
    jest.advanceTimersByTime(1);
    p.push('d');
    p.cancel();
    jest.advanceTimersByTime(100);
    expect(writes.map(([, text]) => text)).toEqual(['a', 'b', 'c']);
  });

  it('writes every piece as it comes with an interval of 0', () => {
    const { writes, pacer: p } = pacer(0);
    for (const piece of ['x', 'y', 'z']) p.push(piece);
    expect(writes).toEqual([
      [0, 'x'],
      [0, 'y'],
      [0, 'z'],
    ]);
  });
});
