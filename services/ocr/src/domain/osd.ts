/** tesseract's orientation and script detection (`--psm 0`) output. */

export interface Orientation {
  /** Degrees to turn the page clockwise so its text is upright: 0, 90, 180 or 270. */
  readonly rotate: 0 | 90 | 180 | 270;
  /** tesseract's orientation confidence (unbounded; ~2 and up is a clear answer). */
  readonly confidence: number;
}

/** Parses `Rotate: 270` / `Orientation confidence: 13.19`; null when OSD found too little text. */
export function parseOsd(output: string): Orientation | null {
  const rotate = /^Rotate:\s*(\d+)/m.exec(output)?.[1];
  const confidence = /^Orientation confidence:\s*([\d.]+)/m.exec(output)?.[1];
  if (rotate === undefined || confidence === undefined) return null;
  const degrees = Number(rotate) % 360;
  if (degrees !== 0 && degrees !== 90 && degrees !== 180 && degrees !== 270) return null;
  return { rotate: degrees, confidence: Number(confidence) };
}
