import { BadRequestError } from '@clinicalsuite/kit';
import sharp, { type Metadata } from 'sharp';
import type { EncodedImage, ImageLimits, ImageMediaType } from '../domain/images.js';

/**
 * Checks an image's bytes with sharp (libvips) before the backend sees them: the header must be
 * PNG, JPEG or WEBP, width times height within the pixel limit (read from the header, so a pixel
 * bomb is refused before it is decoded), and the whole image must decode (a truncated file is a
 * 400 here, not an engine error). WEBP is re-encoded as PNG: llama.cpp's image loader (stb_image)
 * reads PNG and JPEG only, and decodes WEBP only through ffmpeg, which llama-server does not link.
 */

export interface CheckedImage {
  readonly param: string;
  readonly mediaType: 'image/png' | 'image/jpeg';
  readonly bytes: Buffer;
  readonly width: number;
  readonly height: number;
}

const FORMATS: Readonly<Record<string, ImageMediaType>> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
};

export async function checkImage(image: EncodedImage, limits: ImageLimits): Promise<CheckedImage> {
  const { param } = image;
  const bad = (message: string, code: string): BadRequestError =>
    new BadRequestError(`${param}: ${message}`, { param, code });
  let meta: Metadata;
  try {
    meta = await sharp(image.bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw bad(
      `the data is not a readable image (declared ${image.declaredType}); send PNG, JPEG or WEBP`,
      'invalid_image',
    );
  }
  const actual = FORMATS[meta.format];
  if (actual === undefined) {
    throw bad(`the data is a ${meta.format} image, not PNG, JPEG or WEBP`, 'unsupported_image_type');
  }
  const width = meta.width;
  const height = meta.height;
  if (!(width > 0 && height > 0)) throw bad('the image has no dimensions', 'invalid_image');
  const pixels = width * height * Math.max(1, meta.pages ?? 1);
  if (pixels > limits.maxPixels) {
    throw bad(
      `the image is ${width}x${height}${(meta.pages ?? 1) > 1 ? ` with ${meta.pages} frames` : ''} ` +
        `(${pixels} pixels), over the limit of ${limits.maxPixels} pixels`,
      'image_too_many_pixels',
    );
  }
  // Decoding every pixel proves the file is whole (a truncated one fails here, not in the engine).
  // WEBP is decoded once, into the PNG the backend gets; PNG and JPEG are decoded with
  // shrink-on-load, which keeps the memory small, and sent as they came.
  const decoder = sharp(image.bytes, { limitInputPixels: limits.maxPixels, failOn: 'error' });
  try {
    if (actual === 'image/webp') {
      return { param, mediaType: 'image/png', bytes: await decoder.png().toBuffer(), width, height };
    }
    await decoder.resize(64, 64, { fit: 'inside' }).raw().toBuffer();
    return { param, mediaType: actual, bytes: image.bytes, width, height };
  } catch {
    throw bad('the image data is corrupt or truncated', 'invalid_image');
  }
}
