/**
 * Body parsers for routes that take JSON only. Without the type check a form or a text body would
 * reach the handler as an empty object and read as "missing fields" (422); it is a 415 instead,
 * saying what to send.
 */
import express, { type RequestHandler } from 'express';
import { UnsupportedMediaTypeError } from '../errors.js';

export interface JsonBodyOptions {
  /** express.json's size limit (bytes or a string like '10mb'); over it is a 413. */
  readonly limit: number | string;
  /** What the 415 says, e.g. 'Send the search as JSON (Content-Type: application/json)'. */
  readonly message?: string;
}

export function jsonBody(options: JsonBodyOptions): RequestHandler[] {
  const message = options.message ?? 'The body must be JSON (Content-Type: application/json)';
  const requireJson: RequestHandler = (req, _res, next) => {
    next(req.is('application/json') ? undefined : new UnsupportedMediaTypeError(message));
  };
  return [requireJson, express.json({ limit: options.limit })];
}
