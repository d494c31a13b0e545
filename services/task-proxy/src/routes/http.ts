import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { BadRequestError, ForbiddenError, multipart, UnsupportedMediaTypeError } from '@clinicalsuite/kit';
import { checkOrigin } from '../domain/origin.js';

/** HTTP pieces the proxy's routes share: the session cookie, the origin guard, form bodies. */

export const SESSION_COOKIE = 'PHPSESSID';

/** Every value of cookie `name` in the request (a browser may send several). */
export function cookieValues(req: Request, name: string = SESSION_COOKIE): string[] {
  const header = req.headers.cookie;
  if (header === undefined) return [];
  const values: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    values.push(value);
  }
  return values;
}

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Lax (not sent on cross-site POSTs),
 * Path=/, Secure when the request came over TLS (`req.secure`, which trusts X-Forwarded-Proto only
 * with TRUST_PROXY). No Max-Age: it ends with the browser; the server ends it earlier.
 */
export function setSessionCookie(req: Request, res: Response, id: string): void {
  res.append(
    'set-cookie',
    `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax${req.secure ? '; Secure' : ''}`,
  );
}

export function clearSessionCookie(req: Request, res: Response): void {
  res.append(
    'set-cookie',
    `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT${
      req.secure ? '; Secure' : ''
    }`,
  );
}

/** This service's origin as the client reached it (scheme from req.protocol, host from Host). */
export function ownOrigin(req: Request): string {
  return `${req.protocol}://${req.headers.host ?? 'localhost'}`;
}

/** 403 for a request a page of another site sent (see domain/origin.ts). */
export function originGuard(allowed: readonly string[]): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const verdict = checkOrigin({
      origin: req.headers.origin,
      secFetchSite: headerText(req.headers['sec-fetch-site']),
      ownOrigin: ownOrigin(req),
      allowed,
    });
    if (verdict.ok) next();
    else next(new ForbiddenError(verdict.reason, { code: 'cross_origin' }));
  };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Form fields from multipart/form-data, application/x-www-form-urlencoded or JSON (an object);
 * files are refused (400), another media type with a body is 415. After the origin guard. Every
 * encoding has the same total limit, `bodyLimit` (413 past it): multipart is counted as a whole,
 * not per field (32 fields of `bodyLimit` each would be 32 times as much).
 */
export function formBody(options: {
  allowedOrigins: readonly string[];
  bodyLimit: number;
}): RequestHandler[] {
  const [, parseMultipart] = multipart({
    files: [],
    maxFileBytes: 1,
    maxFieldBytes: options.bodyLimit,
    maxFields: 32,
    maxBodyBytes: options.bodyLimit,
  });
  if (parseMultipart === undefined) throw new Error('the kit’s multipart parser changed shape');
  const FORM_TYPES = ['multipart/form-data', 'application/json', 'application/x-www-form-urlencoded'];
  const mediaType: RequestHandler = (req, _res, next) => {
    // req.is answers null when there is no body at all.
    if (typeof req.is('*/*') === 'string' && req.is(FORM_TYPES) === false) {
      next(
        new UnsupportedMediaTypeError(
          'Send the fields as multipart/form-data, application/x-www-form-urlencoded or application/json',
        ),
      );
      return;
    }
    next();
  };
  const multipartOnly: RequestHandler = (req, res, next) => {
    if (req.is('multipart/form-data')) parseMultipart(req, res, next);
    else next();
  };
  const objectOnly: RequestHandler = (req, _res, next) => {
    const body: unknown = req.body;
    if (body === undefined || body === null) req.body = {};
    else if (typeof body !== 'object' || Array.isArray(body)) {
      next(new BadRequestError('The body must be an object of fields', { code: 'invalid_body' }));
      return;
    }
    next();
  };
  // express.json and express.urlencoded each parse only their own media type.
  return [
    originGuard(options.allowedOrigins),
    mediaType,
    multipartOnly,
    express.json({ limit: options.bodyLimit }),
    express.urlencoded({ extended: false, limit: options.bodyLimit, parameterLimit: 64 }),
    objectOnly,
  ];
}

/** Whether the client would rather have HTML (a browser's form) than JSON (an API client). */
export function prefersHtml(req: Request): boolean {
  return req.accepts(['json', 'html']) === 'html';
}

/** A field of the parsed body as a string (undefined when absent or not a string/number). */
export function bodyText(req: Request, name: string): string | undefined {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}
