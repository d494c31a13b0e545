import { describe, expect, it } from '@jest/globals';
import { StopText } from '../../services/llm/src/domain/stop-text.js';

/** Pushes the pieces; returns what was released piece by piece, then at the end. */
function run(
  stops: string[],
  pieces: string[],
  trim = false,
): { released: string[]; reply: string; stopped: boolean } {
  const text = new StopText(stops, trim);
  const released = pieces.map((piece) => text.push(piece));
  released.push(text.end());
  return { released, reply: text.reply, stopped: text.hasStopped };
}

describe('StopText', () => {
  it('releases text at once when no stop sequence could start in it', () => {
    expect(run(['END'], ['Hello', ' world'])).toEqual({
      released: ['Hello', ' world', ''],
      reply: 'Hello world',
      stopped: false,
    });
  });

  it('holds back a possible start of a stop sequence until it is decided', () => {
    // "E" and "EN" could begin "END": held; "ENx" cannot: released.
    expect(run(['END'], ['abc E', 'N', 'x'])).toEqual({
      released: ['abc ', '', 'ENx', ''],
      reply: 'abc ENx',
      stopped: false,
    });
  });

  it('cuts at a stop sequence split across pieces and releases nothing of it', () => {
    const r = run(['</answer>'], ['42 </ans', 'wer> and more']);
    expect(r).toEqual({ released: ['42 ', '', ''], reply: '42 ', stopped: true });
  });

  it('cuts at the earliest of several stop sequences, and takes nothing after a stop', () => {
    const text = new StopText(['b', 'cd']);
    expect(text.push('xxcdyb')).toBe('xx');
    expect(text.push('more')).toBe('');
    expect(text.reply).toBe('xx');
  });

  it('releases the held-back text at the end when no stop came', () => {
    expect(run(['STOP'], ['value ST'])).toEqual({
      released: ['value ', 'ST'],
      reply: 'value ST',
      stopped: false,
    });
  });

  it('never shows trailing whitespace when trimming: it is released only once text follows', () => {
    const r = run([], ['{"a": 1', '}\n', '\n  '], true);
    expect(r.released).toEqual(['{"a": 1', '}', '', '']);
    expect(r.reply).toBe('{"a": 1}');
    const inner = run([], ['{"a":', ' ', '1}'], true);
    expect(inner.released).toEqual(['{"a":', '', ' 1}', '']);
  });

  it('finds a stop sequence that is the very first text', () => {
    expect(run(['\n\n'], ['\n', '\nrest'])).toEqual({ released: ['', '', ''], reply: '', stopped: true });
  });
});
