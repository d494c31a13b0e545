/** How a requested speed (1.0 = the voice's normal rate) reaches each engine. Pure. */

export const MIN_SPEED = 0.5;
export const MAX_SPEED = 2.0;

/** espeak-ng's normal rate, in words per minute (its `-s` default). */
export const ESPEAK_BASE_WPM = 175;
/** espeak-ng's accepted `-s` range. */
export const ESPEAK_MIN_WPM = 80;
export const ESPEAK_MAX_WPM = 450;

export function espeakWordsPerMinute(speed: number): number {
  return Math.min(ESPEAK_MAX_WPM, Math.max(ESPEAK_MIN_WPM, Math.round(ESPEAK_BASE_WPM * speed)));
}

/** VITS length scale: the voice's own (its `.onnx.json` inference.length_scale) over the speed. */
export function piperLengthScale(voiceLengthScale: number, speed: number): number {
  return voiceLengthScale / speed;
}
