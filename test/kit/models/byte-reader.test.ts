import { describe, expect, it } from '@jest/globals';
import { ByteReader } from '../../../services/kit/src/models/byte-reader.js';

class Truncated extends Error {}

const reader = (bytes: Buffer): ByteReader =>
  new ByteReader(bytes, (what, at) => new Truncated(`${what} at ${String(at)}`));

describe('ByteReader', () => {
  it('reads little-endian values in order and hands out slices uncopied', () => {
    const b = Buffer.alloc(27);
    b.writeUInt8(7, 0);
    b.writeUInt16LE(513, 1);
    b.writeInt32LE(-2, 3);
    b.writeUInt32LE(4_000_000_000, 7);
    b.writeBigUInt64LE(2n ** 40n + 3n, 11);
    b.writeFloatLE(1.5, 19);
    b.write('abcd', 23, 'latin1');
    const r = reader(b);
    expect([r.u8('a'), r.u16('b'), r.i32('c'), r.u32('d'), r.u64('e'), r.f32('f')]).toEqual([
      7,
      513,
      -2,
      4_000_000_000,
      2 ** 40 + 3,
      1.5,
    ]);
    const tail = r.take(4, 'g');
    expect(tail.toString('latin1')).toBe('abcd');
    expect(tail.buffer).toBe(b.buffer);
    expect(r.at).toBe(27);
  });

  it("throws the caller's error, naming what it read and where, past the end", () => {
    const r = reader(Buffer.from([1, 2, 3]));
    r.u16('first');
    expect(() => r.u32('the count')).toThrow(new Truncated('the count at 2'));
    expect(() => r.take(2, 'the data')).toThrow(Truncated);
    expect(() => r.need(-1, 'a negative length')).toThrow(/a negative length at 2/);
    expect(r.u8('last')).toBe(3);
    expect(() => r.u8('more')).toThrow(/more at 3/);
  });
});
