import { performance } from 'node:perf_hooks';
import { mapBoxToSource, type Rotation } from '../domain/geometry.js';
import { tesseractLanguages, type Language } from '../domain/language.js';
import {
  MIN_ORIENTATION_CONFIDENCE,
  betterRead,
  needsOrientationCheck,
  shouldDeskew,
} from '../domain/page.js';
import { estimateSkew, type GrayImage } from '../domain/skew.js';
import { meanConfidence, parseTsv, round4, type Box, type RecognizedLine } from '../domain/tsv.js';
import { downscaleGray, encodePng, rotateGray } from './image.js';
import type { Tesseract, TesseractInfo } from './tesseract.js';

/**
 * One page through the pipeline: straighten small skew (projection profile), read with tesseract,
 * and when the read looks wrong (low confidence, text running down the page) ask tesseract's
 * orientation detection, turn the page and read again, keeping the better read. Boxes come back
 * on the page as it was given.
 */

export type Stage = 'decode' | 'render' | 'deskew' | 'orientation' | 'recognize';

export interface PageOptions {
  readonly language: Language;
  readonly autoRotate: boolean;
  readonly deskew: boolean;
  /** Known resolution (rendered PDF pages). */
  readonly dpi?: number;
}

export interface PageLine {
  readonly text: string;
  readonly confidence: number;
  readonly box: Box;
  readonly chars: number;
}

export interface PageResult {
  readonly width: number;
  readonly height: number;
  readonly rotationApplied: 0 | 90 | 180 | 270;
  readonly orientationConfidence: number | null;
  readonly skewDegrees: number;
  readonly lines: readonly PageLine[];
  readonly meanConfidence: number | null;
}

/** Longest side of the copy the skew is measured on. */
const SKEW_SIDE = 1000;

export class OcrEngine {
  constructor(
    readonly tesseract: Tesseract,
    readonly info: TesseractInfo,
    private readonly observe: (stage: Stage, seconds: number) => void,
  ) {}

  private async timed<T>(stage: Stage, work: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await work();
    } finally {
      this.observe(stage, (performance.now() - t0) / 1000);
    }
  }

  private async read(
    page: GrayImage,
    turn: 0 | 90 | 180 | 270,
    options: PageOptions,
    signal: AbortSignal,
  ): Promise<{ lines: RecognizedLine[]; skew: number; turn: 0 | 90 | 180 | 270 }> {
    const rotations: Rotation[] = [];
    let image = page;
    if (turn !== 0) {
      const turned = await rotateGray(image, turn);
      rotations.push(rotation(image, turned, turn));
      image = turned;
    }
    let skew = 0;
    if (options.deskew) {
      const straightened = await this.timed('deskew', async () => {
        const estimate = estimateSkew(await downscaleGray(image, SKEW_SIDE));
        if (!shouldDeskew(estimate)) return undefined;
        skew = estimate.degrees;
        return rotateGray(image, -estimate.degrees);
      });
      if (straightened !== undefined) {
        rotations.push(rotation(image, straightened, -skew));
        image = straightened;
      }
    }
    signal.throwIfAborted();
    const png = await encodePng(image);
    const tsv = await this.timed('recognize', () =>
      this.tesseract.recognize(png, tesseractLanguages(options.language), signal, options.dpi),
    );
    const lines = parseTsv(tsv).map((l) => ({ ...l, box: mapBoxToSource(l.box, rotations) }));
    return { lines, skew, turn };
  }

  async page(image: GrayImage, options: PageOptions, signal: AbortSignal): Promise<PageResult> {
    let best = await this.read(image, 0, options, signal);
    let orientationConfidence: number | null = null;
    if (options.autoRotate && this.info.osd && needsOrientationCheck(best)) {
      const png = await encodePng(image);
      const orientation = await this.timed('orientation', () => this.tesseract.orientation(png, signal));
      orientationConfidence = orientation === null ? null : round4(orientation.confidence);
      if (
        orientation !== null &&
        orientation.rotate !== 0 &&
        orientation.confidence >= MIN_ORIENTATION_CONFIDENCE
      ) {
        best = betterRead(best, await this.read(image, orientation.rotate, options, signal));
      }
    }
    return {
      width: image.width,
      height: image.height,
      rotationApplied: best.turn,
      orientationConfidence,
      skewDegrees: best.skew,
      lines: best.lines,
      meanConfidence: meanConfidence(best.lines),
    };
  }
}

function rotation(from: GrayImage, to: GrayImage, degrees: number): Rotation {
  return { degrees, inWidth: from.width, inHeight: from.height, outWidth: to.width, outHeight: to.height };
}
