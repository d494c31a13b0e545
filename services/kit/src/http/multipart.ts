import { tmpdir } from 'node:os';
import { unlink } from 'node:fs/promises';
import type { Request, RequestHandler } from 'express';
import multer from 'multer';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../errors.js';

/**
 * multipart/form-data for a route's `bodyParser`: multer with limits that answer with the kit's
 * errors (413 for a file over its size, 400 for too many files or an unexpected field), form
 * fields in `req.body` (strings, for the route's zod schema to coerce), files by field name.
 * Disk storage (for videos) deletes the files when the response ends. File names are read as
 * UTF-8, as browsers and fetch send them.
 */

export interface MultipartField {
  readonly name: string;
  /** Files the field may hold (1 for a single file). */
  readonly maxCount: number;
}

export interface MultipartOptions {
  readonly files: readonly MultipartField[];
  /** Largest file, in bytes. */
  readonly maxFileBytes: number;
  /** Largest text field, in bytes (default 1 MiB). */
  readonly maxFieldBytes?: number;
  /** Most text fields (default 50). */
  readonly maxFields?: number;
  /**
   * Largest body as a whole, files and fields together (413 past it, as a JSON body over BODY_LIMIT);
   * default none. A declared length over it is refused before anything is read; a chunked body is
   * counted as it arrives.
   */
  readonly maxBodyBytes?: number;
  /** `memory` (default) keeps files as Buffers; `disk` writes them under `dir` (default tmpdir). */
  readonly storage?: 'memory' | 'disk';
  readonly dir?: string;
}

export interface UploadedFile {
  readonly fieldname: string;
  readonly originalname: string;
  readonly mimetype: string;
  readonly size: number;
  /** Memory storage. */
  readonly buffer?: Buffer;
  /** Disk storage. */
  readonly path?: string;
}

export function multipart(options: MultipartOptions): RequestHandler[] {
  const upload = multer({
    storage:
      options.storage === 'disk'
        ? multer.diskStorage({ destination: options.dir ?? tmpdir() })
        : multer.memoryStorage(),
    // Browsers and fetch send a file's name as raw UTF-8 bytes in `filename="…"`; multer's default
    // reads them as latin1 ("ảnh.jpg" became "áº£nh.jpg"). `filename*=` (RFC 5987) names its own
    // charset and is decoded by it either way.
    defParamCharset: 'utf8',
    limits: {
      fileSize: options.maxFileBytes,
      files: options.files.reduce((sum, field) => sum + field.maxCount, 0),
      fields: options.maxFields ?? 50,
      fieldSize: options.maxFieldBytes ?? 1024 * 1024,
      parts: (options.maxFields ?? 50) + options.files.reduce((sum, field) => sum + field.maxCount, 0),
    },
  }).fields(options.files.map((field) => ({ name: field.name, maxCount: field.maxCount })));

  const requireMultipart: RequestHandler = (req, _res, next) => {
    if (!req.is('multipart/form-data')) {
      next(new UnsupportedMediaTypeError('Send the request as multipart/form-data'));
      return;
    }
    // multer reads the bytes as they come: a compressed form would be parsed as garbage.
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity') {
      next(
        new UnsupportedMediaTypeError(
          `Send multipart/form-data uncompressed (Content-Encoding: ${encoding})`,
        ),
      );
      return;
    }
    next();
  };
  const maxBodyBytes = options.maxBodyBytes;
  const tooLarge = (): PayloadTooLargeError =>
    new PayloadTooLargeError(`Request body exceeds the limit of ${String(maxBodyBytes)} bytes`);
  const parse: RequestHandler = (req, res, next) => {
    if (maxBodyBytes !== undefined && Number(req.headers['content-length'] ?? Number.NaN) > maxBodyBytes) {
      next(tooLarge());
      return;
    }
    let over = false;
    upload(req, res, (error: unknown) => {
      if (options.storage === 'disk') res.once('close', () => void removeUploads(req));
      if (!over && (error === undefined || error === null)) {
        req.body ??= {};
        next();
        return;
      }
      void removeUploads(req).finally(() => {
        next(over ? tooLarge() : toKitError(error, options));
      });
    });
    if (maxBodyBytes === undefined) return;
    // multer pipes the request synchronously, so a listener added right after sees every chunk.
    // Past the limit the request fails through multer's own path, which stops parsing and drains
    // the rest; the answer is 413.
    let received = 0;
    const count = (chunk: Buffer): void => {
      received += chunk.length;
      if (received <= maxBodyBytes) return;
      over = true;
      req.off('data', count);
      req.emit('error', tooLarge());
    };
    req.on('data', count);
    req.once('end', () => req.off('data', count));
  };
  return [requireMultipart, parse];
}

/** The files of one field (empty when none came). */
export function uploadedFiles(req: Request, field: string): UploadedFile[] {
  const files = req.files as Record<string, UploadedFile[]> | UploadedFile[] | undefined;
  if (files === undefined || Array.isArray(files)) return [];
  return files[field] ?? [];
}

function toKitError(error: unknown, options: MultipartOptions): Error {
  if (error instanceof multer.MulterError) {
    const field = error.field === undefined ? '' : ` (field \`${error.field}\`)`;
    switch (error.code) {
      case 'LIMIT_FILE_SIZE':
        return new PayloadTooLargeError(
          `A file is larger than the ${formatBytes(options.maxFileBytes)} limit${field}`,
          error.field === undefined ? {} : { param: error.field },
        );
      case 'LIMIT_FILE_COUNT':
      case 'LIMIT_UNEXPECTED_FILE': {
        const allowed = options.files.map((f) => `\`${f.name}\` (at most ${String(f.maxCount)})`).join(', ');
        return new BadRequestError(
          options.files.length === 0
            ? `This form takes no files${field}: send its fields only`
            : `Too many files or an unexpected file field${field}: files are accepted in ${allowed}`,
          { code: 'too_many_files', ...(error.field === undefined ? {} : { param: error.field }) },
        );
      }
      case 'LIMIT_FIELD_VALUE':
        return new PayloadTooLargeError(`A form field is too long${field}`);
      default:
        return new BadRequestError(`Malformed multipart body: ${error.message}${field}`, {
          code: 'bad_multipart',
        });
    }
  }
  if (error instanceof Error) {
    return new BadRequestError(`Malformed multipart body: ${error.message}`, { code: 'bad_multipart' });
  }
  return new BadRequestError('Malformed multipart body', { code: 'bad_multipart' });
}

async function removeUploads(req: Request): Promise<void> {
  const files = req.files as Record<string, UploadedFile[]> | UploadedFile[] | undefined;
  if (files === undefined) return;
  const all = Array.isArray(files) ? files : Object.values(files).flat();
  await Promise.all(
    all.flatMap((file) => (file.path === undefined ? [] : [unlink(file.path).catch(() => undefined)])),
  );
}

function formatBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${String(bytes / (1024 * 1024))} MB`;
  if (bytes % 1024 === 0) return `${String(bytes / 1024)} KB`;
  return `${String(bytes)} bytes`;
}
