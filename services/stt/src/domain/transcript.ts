import type { Segment } from './types.js';

/** The transcript's text: its segments' text, in order, one space between them. */
export function joinSegments(segments: readonly Segment[]): string {
  return segments
    .map((s) => s.text.trim())
    .filter((t) => t !== '')
    .join(' ');
}

/** Seconds of audio in `bytes` of 16 kHz mono s16le PCM. */
export function pcmSeconds(bytes: number, sampleRate = 16_000): number {
  return bytes / 2 / sampleRate;
}
