/**
 * Cross-site request refusal for POSTs (sign-in included) and sign-out: a browser names the page
 * that sent a request in `Origin` (and `Sec-Fetch-Site`); a request from another site is refused,
 * so a page elsewhere cannot act with the user's cookie. Requests without either header (curl,
 * SDKs, server-to-server) are not from a browser page and pass; their callers hold the session.
 */

export interface OriginInput {
  /** The `Origin` header, if any. */
  readonly origin: string | undefined;
  /** The `Sec-Fetch-Site` header, if any. */
  readonly secFetchSite: string | undefined;
  /** This service's own origin as the request reached it (`https://host:port`). */
  readonly ownOrigin: string;
  /** Further origins allowed (TASK_PROXY_ALLOWED_ORIGINS), normalized. */
  readonly allowed: readonly string[];
}

export type OriginVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** `https://Example.org:443` → `https://example.org`; undefined when not an http(s) origin. */
export function normalizeOrigin(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

export function checkOrigin(input: OriginInput): OriginVerdict {
  if (input.origin !== undefined) {
    const origin = normalizeOrigin(input.origin);
    const own = normalizeOrigin(input.ownOrigin);
    if (origin !== undefined && (origin === own || input.allowed.includes(origin))) return { ok: true };
    return {
      ok: false,
      reason: `cross-origin request refused: Origin ${origin ?? 'null'} is neither this service's origin nor in TASK_PROXY_ALLOWED_ORIGINS`,
    };
  }
  if (input.secFetchSite?.trim().toLowerCase() === 'cross-site')
    return { ok: false, reason: 'cross-site request refused (Sec-Fetch-Site: cross-site without Origin)' };
  return { ok: true };
}
