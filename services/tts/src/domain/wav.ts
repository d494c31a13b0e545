/**
 * WAV (RIFF) encoding and parsing for 16-bit PCM. Pure: bytes in, bytes out. espeak-ng writing to
 * a pipe cannot seek back to fill in its sizes (it leaves 0x7ffff000), so parsing takes the data
 * chunk's declared size only when the bytes are there, else the rest of the buffer.
 */

export const WAV_HEADER_BYTES = 44;

/** WAV samples are little-endian; so are typed arrays on every platform Node runs on but a few. */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

export interface PcmAudio {
  /** 16-bit signed samples, mono. */
  readonly samples: Int16Array;
  readonly sampleRate: number;
}

export interface ParsedWav {
  readonly audioFormat: number;
  readonly channels: number;
  readonly sampleRate: number;
  readonly bitsPerSample: number;
  readonly blockAlign: number;
  readonly byteRate: number;
  /** The RIFF chunk size as written (file size - 8 when complete). */
  readonly riffSize: number;
  /** The data chunk size as written. */
  readonly declaredDataBytes: number;
  /** The sample bytes found (at most the declared size). */
  readonly data: Buffer;
}

export class WavFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WavFormatError';
  }
}

/** A canonical 44-byte-header WAV of mono 16-bit PCM. */
export function encodeWav(audio: PcmAudio): Buffer {
  const dataBytes = audio.samples.length * 2;
  const out = Buffer.alloc(WAV_HEADER_BYTES + dataBytes);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + dataBytes, 4);
  out.write('WAVE', 8, 'ascii');
  out.write('fmt ', 12, 'ascii');
  out.writeUInt32LE(16, 16); // fmt chunk size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(audio.sampleRate, 24);
  out.writeUInt32LE(audio.sampleRate * 2, 28); // byte rate
  out.writeUInt16LE(2, 32); // block align
  out.writeUInt16LE(16, 34); // bits per sample
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(dataBytes, 40);
  if (LITTLE_ENDIAN) {
    out.set(new Uint8Array(audio.samples.buffer, audio.samples.byteOffset, dataBytes), WAV_HEADER_BYTES);
  } else {
    for (let i = 0; i < audio.samples.length; i++) out.writeInt16LE(audio.samples[i] ?? 0, 44 + i * 2);
  }
  return out;
}

/** Walks the RIFF chunks to `fmt ` and `data`. */
export function parseWav(buf: Buffer): ParsedWav {
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') {
    throw new WavFormatError('not a RIFF/WAVE file');
  }
  let offset = 12;
  let fmt: Omit<ParsedWav, 'riffSize' | 'declaredDataBytes' | 'data'> | undefined;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('ascii', offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > buf.length) throw new WavFormatError('truncated fmt chunk');
      fmt = {
        audioFormat: buf.readUInt16LE(body),
        channels: buf.readUInt16LE(body + 2),
        sampleRate: buf.readUInt32LE(body + 4),
        byteRate: buf.readUInt32LE(body + 8),
        blockAlign: buf.readUInt16LE(body + 12),
        bitsPerSample: buf.readUInt16LE(body + 14),
      };
    } else if (id === 'data') {
      if (fmt === undefined) throw new WavFormatError('data chunk before fmt chunk');
      const end = Math.min(buf.length, body + size);
      return {
        ...fmt,
        riffSize: buf.readUInt32LE(4),
        declaredDataBytes: size,
        data: buf.subarray(body, end),
      };
    }
    offset = body + size + (size % 2); // chunks are padded to an even size
  }
  throw new WavFormatError(fmt === undefined ? 'no fmt chunk' : 'no data chunk');
}

/** Mono 16-bit PCM out of a WAV, or an error naming what it is instead. */
export function pcmFromWav(buf: Buffer): PcmAudio {
  const wav = parseWav(buf);
  if (wav.audioFormat !== 1 || wav.bitsPerSample !== 16 || wav.channels !== 1) {
    throw new WavFormatError(
      `expected mono 16-bit PCM, got format ${String(wav.audioFormat)}, ${String(wav.channels)} channels, ` +
        `${String(wav.bitsPerSample)} bits`,
    );
  }
  const count = Math.floor(wav.data.length / 2);
  const samples = new Int16Array(count);
  if (LITTLE_ENDIAN) new Uint8Array(samples.buffer).set(wav.data.subarray(0, count * 2));
  else for (let i = 0; i < count; i++) samples[i] = wav.data.readInt16LE(i * 2);
  return { samples, sampleRate: wav.sampleRate };
}

export function durationSeconds(audio: PcmAudio): number {
  return audio.samples.length / audio.sampleRate;
}

/** Joins chunks of one sample rate, with `gapSamples` of silence between them. */
export function concatPcm(chunks: readonly Int16Array[], gapSamples = 0): Int16Array {
  const total = chunks.reduce((n, c) => n + c.length, 0) + Math.max(0, chunks.length - 1) * gapSamples;
  const out = new Int16Array(total);
  let at = 0;
  chunks.forEach((chunk, i) => {
    if (i > 0) at += gapSamples;
    out.set(chunk, at);
    at += chunk.length;
  });
  return out;
}

/**
 * Float audio in [-1, 1] (a VITS decoder's output) to 16-bit PCM, normalised to the peak as Piper
 * does (a peak below 0.01 is not amplified more than 100x), then clipped.
 */
export function floatToInt16(audio: Float32Array): Int16Array {
  let peak = 0;
  for (const v of audio) {
    const a = Math.abs(v);
    if (a > peak && Number.isFinite(a)) peak = a;
  }
  const scale = 32767 / Math.max(0.01, peak);
  const out = new Int16Array(audio.length);
  for (let i = 0; i < audio.length; i++) {
    const v = Math.round((audio[i] ?? 0) * scale);
    out[i] = Number.isFinite(v) ? Math.max(-32768, Math.min(32767, v)) : 0;
  }
  return out;
}
