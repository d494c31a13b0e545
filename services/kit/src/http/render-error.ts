import type { NextFunction, Request, Response } from 'express';
import {
  BadRequestError,
  HttpError,
  InternalError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors.js';
import { requestContext } from './context.js';

/**
 * The one error middleware. Three body shapes (docs/architecture.md §7):
 * - OpenAI's `{error:{message,type,param,code}}` on `/v1/*`;
 * - `{detail: "..."}` elsewhere, and `{detail: [{loc,msg,type}]}` for 422;
 * - the face service's `{success:false, message}` envelope (422 adds `errors`).
 * Never a stack trace, never an HTML page.
 */

export type ErrorShape = 'detail' | 'envelope';

export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  // body-parser and multer errors carry their own status and type.
  if (typeof error === 'object' && error !== null) {
    const e = error as { type?: unknown; status?: unknown; code?: unknown; limit?: unknown; field?: unknown };
    if (e.type === 'entity.too.large' || e.code === 'LIMIT_FILE_SIZE') {
      const limit = typeof e.limit === 'number' ? ` of ${e.limit} bytes` : '';
      return new PayloadTooLargeError(`Request body exceeds the limit${limit}`, { cause: error });
    }
    if (e.type === 'parameters.too.many' || (e.status === 413 && e.type !== undefined)) {
      return new PayloadTooLargeError('Request body has more form fields than this endpoint accepts', {
        cause: error,
      });
    }
    if (e.type === 'entity.parse.failed') {
      return new BadRequestError('Request body is not valid JSON', { code: 'invalid_json', cause: error });
    }
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
      return new UnsupportedMediaTypeError('Unsupported request body encoding or charset', { cause: error });
    }
    if (typeof e.code === 'string' && e.code.startsWith('LIMIT_')) {
      const field = typeof e.field === 'string' ? ` (field ${e.field})` : '';
      return new BadRequestError(`Upload rejected: ${e.code.toLowerCase()}${field}`, {
        code: 'upload_rejected',
        cause: error,
      });
    }
    if (e.status === 400 && e.type !== undefined) {
      return new BadRequestError('Malformed request', { cause: error });
    }
    // The router's decoding of a path parameter (`/codes/ICD10/%E0%A4%A`): a URIError it marks 400.
    if (error instanceof URIError && e.status === 400) {
      return new BadRequestError('A path parameter is not valid percent-encoded UTF-8', {
        code: 'invalid_path',
        cause: error,
      });
    }
    // body-parser inflating a body that is not what its Content-Encoding says (zlib's Z_* codes).
    if (e.status === 400 && typeof e.code === 'string' && e.code.startsWith('Z_')) {
      return new BadRequestError(
        'The request body does not match its Content-Encoding (gzip, deflate or br)',
        {
          code: 'invalid_content_encoding',
          cause: error,
        },
      );
    }
  }
  return new InternalError('Internal server error', { cause: error });
}

export function renderErrorBody(error: HttpError, path: string, shape: ErrorShape): unknown {
  if (path.startsWith('/v1/')) {
    return {
      error: { message: error.message, type: error.openaiType, param: error.param ?? null, code: error.code },
    };
  }
  if (shape === 'envelope') {
    return error instanceof ValidationError
      ? { success: false, message: error.message, errors: error.issues }
      : { success: false, message: error.message };
  }
  return { detail: error instanceof ValidationError ? error.issues : error.message };
}

export function createErrorRenderer(shape: ErrorShape) {
  const sendError = (req: Request, res: Response, raw: unknown): void => {
    const error = toHttpError(raw);
    const ctx = requestContext(req);
    if (error.status >= 500) ctx.log.error({ err: raw }, 'request failed');
    else ctx.log.debug({ code: error.code, status: error.status }, 'request refused');
    if (res.headersSent) {
      if (!res.writableEnded) res.end();
      return;
    }
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    res.status(error.status).json(renderErrorBody(error, req.path, shape));
  };
  const middleware = (raw: unknown, req: Request, res: Response, _next: NextFunction): void => {
    sendError(req, res, raw);
  };
  return { sendError, middleware };
}
