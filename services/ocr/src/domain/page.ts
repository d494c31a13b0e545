import { meanConfidence, type RecognizedLine } from './tsv.js';

/** Decisions of the page pipeline, kept apart from the engines that feed them. */

/** Below this mean confidence an upright read is checked against tesseract's orientation detection. */
export const ORIENTATION_CHECK_BELOW = 0.85;
/** tesseract's orientation confidence needed to turn a page (it reports ~0.3-1 on noise, 10+ on text). */
export const MIN_ORIENTATION_CONFIDENCE = 1.5;
/** Skew smaller than this is left to tesseract (it copes with a degree or so). */
export const MIN_SKEW_DEGREES = 0.2;
/** The projection profile must be this much sharper at the skew angle than at 0° to act on it. */
export const MIN_SKEW_STRENGTH = 1.05;

export interface PageRead {
  readonly lines: readonly RecognizedLine[];
}

function chars(read: PageRead): number {
  return read.lines.reduce((n, l) => n + l.chars, 0);
}

/**
 * Whether a read of the page as it came should be checked for a 90/180/270° page: its confidence is
 * low, or its lines are mostly taller than wide (text running down the page). A page with no text
 * at all is not checked (there is nothing to orient).
 */
export function needsOrientationCheck(read: PageRead): boolean {
  if (chars(read) === 0) return false;
  const confidence = meanConfidence(read.lines) ?? 0;
  const tall = read.lines.reduce((n, l) => n + l.box.height, 0);
  const wide = read.lines.reduce((n, l) => n + l.box.width, 0);
  return confidence < ORIENTATION_CHECK_BELOW || tall > wide;
}

/**
 * The read to keep: the one of the turned page (`turned`, made because tesseract's orientation
 * detection was confident) unless the upright one is clearly more confident. tesseract can read
 * a page turned 90° as columns of text as confidently as upright, so a tie goes to the turned read,
 * whose lines run across the page as a reader sees them.
 */
export function betterRead<T extends PageRead>(upright: T, turned: T): T {
  const cu = meanConfidence(upright.lines) ?? -1;
  const ct = meanConfidence(turned.lines) ?? -1;
  return cu > ct + 0.02 ? upright : turned;
}

export function shouldDeskew(estimate: { degrees: number; strength: number }): boolean {
  return Math.abs(estimate.degrees) >= MIN_SKEW_DEGREES && estimate.strength >= MIN_SKEW_STRENGTH;
}
