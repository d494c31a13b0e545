import type { NextFunction, Request, Response } from 'express';

/**
 * Cross-origin access for browser clients, off unless CORS_ORIGINS lists origins (exact
 * `scheme://host[:port]` strings; README.md, "Security"). A listed origin gets
 * `Access-Control-Allow-Origin` naming it (never `*`), `Vary: Origin`, and an answer to its
 * preflight (`OPTIONS` with `Access-Control-Request-Method`): the methods, `Authorization` and
 * `Content-Type`, cached 10 minutes. Bearer tokens travel in a header, never in cookies, so
 * credentials are not allowed. Any other origin gets no CORS header: the browser refuses to show
 * it the answer, and its preflight is answered 204 without permission.
 */
export function corsMiddleware(origins: readonly string[]) {
  const allowed = new Set(origins);
  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.headers.origin;
    if (origin === undefined || allowed.size === 0) {
      next();
      return;
    }
    res.vary('Origin');
    const ok = allowed.has(origin);
    if (ok) res.setHeader('access-control-allow-origin', origin);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      if (ok) {
        res.setHeader('access-control-allow-methods', 'GET, POST, PUT, PATCH, DELETE');
        res.setHeader('access-control-allow-headers', 'authorization, content-type, x-request-id');
        res.setHeader('access-control-max-age', '600');
      }
      res.status(204).end();
      return;
    }
    next();
  };
}
