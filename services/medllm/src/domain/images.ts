import { BadRequestError } from '@clinicalsuite/kit';

/**
 * Images arrive as `image_url` parts whose url is a base64 data URL
 * (`data:image/png|jpeg|webp;base64,<data>`). This file parses and bounds them before anything is
 * decoded: the media type, the base64 alphabet, the decoded size (computed from the text, so a
 * 2 GB claim is refused without allocating it) and the number of images. Every refusal is a 400
 * naming the part (`messages[1].content[0]`) and the limit.
 */

export const ACCEPTED_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/webp'] as const;
export type ImageMediaType = (typeof ACCEPTED_MEDIA_TYPES)[number];

export interface ImageLimits {
  readonly maxImages: number;
  readonly maxBytes: number;
  readonly maxPixels: number;
}

export interface EncodedImage {
  /** Where it was: `messages[1].content[0]`. */
  readonly param: string;
  readonly declaredType: ImageMediaType;
  readonly bytes: Buffer;
}

const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)((?:;[a-z0-9-]+=[^;,]*)*)(;base64)?,/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Bytes that `text` (base64 without whitespace) decodes to. */
export function decodedLength(text: string): number {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return Math.floor((text.length * 3) / 4) - padding;
}

export function megabytes(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  return `${mb >= 10 ? Math.round(mb) : Math.round(mb * 10) / 10} MB`;
}

/** Decodes one data URL, or throws a 400 that says what is wrong with it. */
export function decodeDataUrl(url: string, param: string, limits: ImageLimits): EncodedImage {
  const bad = (message: string, code: string): BadRequestError =>
    new BadRequestError(`${param}: ${message}`, { param, code });
  if (!url.startsWith('data:')) {
    throw bad(
      'image_url.url must be a base64 data URL (data:image/png|jpeg|webp;base64,...); remote URLs are not fetched',
      'invalid_image_url',
    );
  }
  const head = DATA_URL.exec(url.slice(0, 512));
  if (head === null) throw bad('malformed data URL: expected data:<type>;base64,<data>', 'invalid_image_url');
  const type = (head[1] ?? '').toLowerCase();
  const mediaType = type === 'image/jpg' ? 'image/jpeg' : type;
  if (!(ACCEPTED_MEDIA_TYPES as readonly string[]).includes(mediaType)) {
    throw bad(`image type ${type} is not accepted; send PNG, JPEG or WEBP`, 'unsupported_image_type');
  }
  if (head[3] === undefined) throw bad('the data URL must be base64-encoded (;base64,)', 'invalid_image_url');
  const text = url.slice(head[0].length).replace(/\s+/g, '');
  if (text.length === 0) throw bad('the image data is empty', 'invalid_image_data');
  if (text.length % 4 === 1 || !BASE64.test(text)) {
    throw bad('the image data is not valid base64', 'invalid_base64');
  }
  const size = decodedLength(text);
  if (size > limits.maxBytes) {
    throw bad(
      `the image is ${megabytes(size)}, over the limit of ${megabytes(limits.maxBytes)}`,
      'image_too_large',
    );
  }
  return { param, declaredType: mediaType as ImageMediaType, bytes: Buffer.from(text, 'base64') };
}

/** Refuses more images than the limit, before any is decoded. */
export function checkImageCount(count: number, limits: ImageLimits): void {
  if (count > limits.maxImages) {
    throw new BadRequestError(
      `The request has ${count} images; at most ${limits.maxImages} are accepted per request`,
      { param: 'messages', code: 'too_many_images' },
    );
  }
}
