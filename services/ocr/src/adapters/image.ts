import sharp, { type Metadata } from 'sharp';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '@clinicalsuite/kit';
import type { GrayImage } from '../domain/skew.js';

/**
 * Images through sharp (libvips): JPEG, PNG, WebP and TIFF (every page of a multi-page TIFF),
 * EXIF orientation applied, to 8-bit grey. Other formats (SVG, GIF, HEIF...) are refused with 415;
 * decompression bombs with 413 from the header's dimensions, before decoding.
 */

export const IMAGE_FORMATS = ['jpeg', 'png', 'webp', 'tiff'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export interface ImageInfo {
  readonly format: ImageFormat;
  readonly pages: number;
}

const WHITE = { r: 255, g: 255, b: 255 };

export function isPdf(bytes: Buffer): boolean {
  // The header may follow up to 1 KB of junk (Acrobat accepts that, poppler too).
  return bytes.subarray(0, 1024).includes('%PDF-');
}

export async function inspectImage(bytes: Buffer, maxPixels: number): Promise<ImageInfo> {
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw new UnsupportedMediaTypeError(
      'The file is not a supported image or PDF: send JPEG, PNG, WebP, TIFF or PDF',
    );
  }
  if (!(IMAGE_FORMATS as readonly string[]).includes(meta.format)) {
    throw new UnsupportedMediaTypeError(
      `The file is ${meta.format.toUpperCase()}: send JPEG, PNG, WebP, TIFF or PDF`,
    );
  }
  checkPixels(meta, maxPixels, 'The image');
  return { format: meta.format as ImageFormat, pages: meta.format === 'tiff' ? (meta.pages ?? 1) : 1 };
}

/**
 * The pages `first`..`last` (0-based) of a multi-page TIFF checked against `maxPixels` from their
 * own headers, before any is decoded: each page has its own size.
 */
export async function checkPages(
  bytes: Buffer,
  first: number,
  last: number,
  maxPixels: number,
): Promise<void> {
  for (let page = first; page <= last; page++) {
    let meta: Metadata;
    try {
      meta = await sharp(bytes, { page, limitInputPixels: false }).metadata();
    } catch {
      throw new BadRequestError(`Page ${String(page + 1)} of the image could not be read`, {
        code: 'invalid_image',
        param: 'file',
      });
    }
    checkPixels(meta, maxPixels, `Page ${String(page + 1)}`);
  }
}

function checkPixels(meta: Metadata, maxPixels: number, what: string): void {
  if (meta.width * meta.height > maxPixels) {
    throw new PayloadTooLargeError(
      `${what} is ${String(meta.width)}x${String(meta.height)} pixels; at most ${String(maxPixels)} pixels a page are accepted`,
      { param: 'file' },
    );
  }
}

/** One page, upright (EXIF orientation applied), in grey. */
export async function decodeGray(bytes: Buffer, page: number, maxPixels: number): Promise<GrayImage> {
  try {
    const { data, info } = await sharp(bytes, { page, limitInputPixels: maxPixels, failOn: 'error' })
      .rotate()
      .flatten({ background: WHITE })
      .greyscale()
      .raw()
      .toBuffer({ resolveWithObject: true });
    return toGray(data, info.width, info.height, info.channels);
  } catch (error) {
    const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new BadRequestError(`The image could not be decoded: ${detail ?? 'unreadable'}`, {
      code: 'invalid_image',
      param: 'file',
    });
  }
}

function toGray(data: Buffer, width: number, height: number, channels: number): GrayImage {
  if (channels === 1)
    return { width, height, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
  const out = new Uint8Array(width * height);
  for (let i = 0; i < out.length; i++) out[i] = data[i * channels] ?? 255;
  return { width, height, data: out };
}

function input(image: GrayImage) {
  return sharp(Buffer.from(image.data.buffer, image.data.byteOffset, image.data.length), {
    raw: { width: image.width, height: image.height, channels: 1 },
  });
}

/** Turned clockwise by `degrees` on a white canvas that grows to fit. */
export async function rotateGray(image: GrayImage, degrees: number): Promise<GrayImage> {
  const { data, info } = await input(image)
    .rotate(degrees, { background: WHITE })
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return toGray(data, info.width, info.height, info.channels);
}

/** At most `maxSide` pixels on its longer side (for the skew estimate). */
export async function downscaleGray(image: GrayImage, maxSide: number): Promise<GrayImage> {
  if (Math.max(image.width, image.height) <= maxSide) return image;
  const { data, info } = await input(image)
    .resize({ width: maxSide, height: maxSide, fit: 'inside' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return toGray(data, info.width, info.height, info.channels);
}

/** Lossless PNG for tesseract's stdin (fast compression: it is read once, locally). */
export async function encodePng(image: GrayImage): Promise<Buffer> {
  return input(image).png({ compressionLevel: 1 }).toBuffer();
}
