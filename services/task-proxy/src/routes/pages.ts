import type { Response } from 'express';
import type { Html } from '../console/html.js';
import { CSP } from '../console/views.js';

/**
 * How every page is sent: the console's CSP (no inline script, the stylesheet by its hash, nothing
 * from elsewhere, no framing), no sniffing, no caching.
 */
export function sendHtml(res: Response, status: number, page: Html): void {
  res.status(status);
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'same-origin');
  res.setHeader('cache-control', 'no-store');
  res.send(page.value);
}
