import sharp, { type Metadata } from 'sharp';
import { BadRequestError, PayloadTooLargeError } from '@clinicalsuite/kit';
import type { RgbImage } from '../domain/align.js';

/**
 * Image decoding with sharp (libvips): JPEG and PNG only, EXIF orientation applied (so boxes are
 * in the upright picture users see), alpha dropped, interleaved RGB out. Decompression bombs are
 * refused before decoding from the header's dimensions.
 */

export interface DecodedImage extends RgbImage {
  readonly format: 'jpeg' | 'png';
}

export interface DecodeLimits {
  /** Largest width x height accepted (default 50 megapixels). */
  readonly maxPixels: number;
}

export async function decodeImage(
  bytes: Buffer,
  name: string,
  limits: DecodeLimits = { maxPixels: 50_000_000 },
): Promise<DecodedImage> {
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw new BadRequestError(`${name} is not an image (JPEG or PNG expected)`, { code: 'invalid_image' });
  }
  if (meta.format !== 'jpeg' && meta.format !== 'png') {
    throw new BadRequestError(`${name} is ${meta.format.toUpperCase()}; send a JPEG or PNG image`, {
      code: 'unsupported_image_type',
    });
  }
  const pixels = meta.width * meta.height;
  if (pixels > limits.maxPixels) {
    throw new PayloadTooLargeError(
      `${name} is ${String(meta.width)}x${String(meta.height)} pixels; at most ${String(limits.maxPixels / 1_000_000)} megapixels are accepted`,
    );
  }
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'error' })
      .rotate()
      .removeAlpha()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoded to ${String(info.channels)} channels`);
    return {
      width: info.width,
      height: info.height,
      data: new Uint8Array(data.buffer, data.byteOffset, data.length),
      format: meta.format,
    };
  } catch (error) {
    throw new BadRequestError(
      `${name} could not be decoded as ${meta.format.toUpperCase()}: ${error instanceof Error ? error.message : String(error)}`,
      { code: 'invalid_image' },
    );
  }
}

/**
 * The image resized to `width` x `height` (stretched, or letterboxed with black bars when `keepAspect`),
 * as interleaved RGB, with the scale and offset that map resized coordinates back to the image.
 */
export async function resizeRgb(
  image: RgbImage,
  width: number,
  height: number,
  keepAspect: boolean,
): Promise<{ data: Uint8Array; scaleX: number; scaleY: number; padX: number; padY: number }> {
  const input = sharp(Buffer.from(image.data.buffer, image.data.byteOffset, image.data.length), {
    raw: { width: image.width, height: image.height, channels: 3 },
  });
  if (!keepAspect) {
    const data = await input.resize(width, height, { fit: 'fill' }).raw().toBuffer();
    return { data, scaleX: image.width / width, scaleY: image.height / height, padX: 0, padY: 0 };
  }
  const scale = Math.min(width / image.width, height / image.height);
  const w = Math.max(1, Math.round(image.width * scale));
  const h = Math.max(1, Math.round(image.height * scale));
  const padX = Math.floor((width - w) / 2);
  const padY = Math.floor((height - h) / 2);
  const data = await input
    .resize(w, h, { fit: 'fill' })
    .extend({
      left: padX,
      right: width - w - padX,
      top: padY,
      bottom: height - h - padY,
      background: { r: 0, g: 0, b: 0 },
    })
    .raw()
    .toBuffer();
  return { data, scaleX: 1 / scale, scaleY: 1 / scale, padX, padY };
}
