import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { NextFunction, Request, Response } from 'express';
import { ForbiddenError, UnauthorizedError } from './errors.js';

/**
 * Bearer-token authentication. Tokens come from environment variables (one token, given scopes)
 * and/or a mounted file holding several tokens with their scopes, one per line:
 *
 *     # comment
 *     <token> ai_agent,llm
 *     <token> *
 *
 * A token with no scope column gets the scopes the service grants by default. The file is
 * re-read when it changes (modification time, size or inode), so a rotated Secret takes effect
 * without a restart. A re-read that fails or finds no tokens (a Secret swap caught mid-way: the
 * `..data` symlink flipping, the file briefly missing or half-written) keeps the last good tokens
 * in force, is retried at the next check and is reported once per failing stretch; it never turns
 * into a 500, and never into "no tokens".
 * Tokens are compared as SHA-256 digests with `timingSafeEqual`, and every known token is compared
 * on every request, so timing reveals neither a token nor which one matched.
 */

export interface TokenGrant {
  readonly token: string;
  readonly scopes: readonly string[];
}

interface StoredToken {
  readonly digest: Buffer;
  readonly scopes: ReadonlySet<string>;
}

export interface TokenStoreOptions {
  readonly tokens?: readonly TokenGrant[];
  readonly file?: string | undefined;
  /** Scopes given to file tokens that list none. */
  readonly defaultScopes?: readonly string[];
  /** How often the file's mtime is checked, at most. */
  readonly recheckMs?: number;
  /** Told once per failing stretch that a re-read failed and the last good tokens stay in force. */
  readonly onReloadFailure?: (message: string) => void;
}

export class TokenStore {
  private fixed: StoredToken[];
  private fromFile: StoredToken[] = [];
  /** What the file looked like when last read well (mtime, size, inode), '' before. */
  private fileVersion = '';
  private checkedAt = 0;
  private failing = false;
  private onReloadFailure: ((message: string) => void) | undefined;
  private readonly file: string | undefined;
  private readonly defaultScopes: readonly string[];
  private readonly recheckMs: number;
  /** The version of a file read empty once, not yet taken as meant. */
  private emptyVersion: string | undefined;

  constructor(options: TokenStoreOptions) {
    this.file = options.file;
    this.defaultScopes = options.defaultScopes ?? [];
    this.recheckMs = options.recheckMs ?? 2000;
    this.onReloadFailure = options.onReloadFailure;
    this.fixed = (options.tokens ?? []).filter((g) => g.token !== '').map(store);
    if (this.file !== undefined) this.reload(true);
  }

  /** Where a failed re-read is reported (buildApp sends it to the service's log), unless one was given. */
  reportReloadFailuresTo(listener: (message: string) => void): void {
    this.onReloadFailure ??= listener;
  }

  /** How many tokens are known now. */
  get size(): number {
    this.maybeReload();
    return this.fixed.length + this.fromFile.length;
  }

  /** The scopes of `token`, or `undefined` when it is not a known token. */
  verify(token: string): ReadonlySet<string> | undefined {
    this.maybeReload();
    const digest = sha256(token);
    let found: ReadonlySet<string> | undefined;
    for (const candidate of [...this.fixed, ...this.fromFile]) {
      // No early exit: every comparison runs.
      if (timingSafeEqual(candidate.digest, digest) && found === undefined) found = candidate.scopes;
    }
    return found;
  }

  private maybeReload(): void {
    if (this.file === undefined) return;
    const now = Date.now();
    if (now - this.checkedAt < this.recheckMs) return;
    this.checkedAt = now;
    this.reload(false);
  }

  private reload(initial: boolean): void {
    if (this.file === undefined) return;
    let version: string;
    let grants: TokenGrant[];
    try {
      const stat = statSync(this.file);
      version = `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
      if (version === this.fileVersion) {
        this.failing = false;
        return;
      }
      grants = parseTokensFile(readFileSync(this.file, 'utf8'), this.defaultScopes);
    } catch (error) {
      // At start-up an unreadable file is a configuration error; later (a Secret being swapped)
      // the last good tokens stay in force.
      if (initial) throw new Error(`AUTH_TOKENS_FILE: cannot read ${this.file}: ${String(error)}`);
      this.failed(`cannot read ${this.file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
      return;
    }
    if (grants.length === 0 && !initial && this.emptyVersion !== version) {
      // Maybe half-written: keep the tokens in force and look again at the next check. Still the
      // same empty file then, it is meant: no token is valid any more (revoking all of them).
      this.emptyVersion = version;
      this.failed(`${this.file} holds no tokens (if it still holds none at the next check, none is valid)`);
      return;
    }
    this.emptyVersion = undefined;
    this.fromFile = grants.map(store);
    this.fileVersion = version;
    this.failing = false;
  }

  private failed(reason: string): void {
    if (this.failing) return;
    this.failing = true;
    this.onReloadFailure?.(
      `AUTH_TOKENS_FILE: ${reason}; the last good tokens stay in force until it reads well`,
    );
  }
}

export function parseTokensFile(text: string, defaultScopes: readonly string[]): TokenGrant[] {
  const grants: TokenGrant[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [token = '', scopeList] = line.split(/\s+/, 2);
    const scopes = scopeList === undefined ? defaultScopes : scopeList.split(',').filter((s) => s !== '');
    grants.push({ token, scopes });
  }
  return grants;
}

export interface AuthPolicy {
  readonly tokens: TokenStore;
  /** Scopes a token needs (any one of them); empty means any known token. `*` grants all. */
  readonly scopes?: readonly string[];
  /** Paths served without a token, exact or as a prefix ending in `/*`. */
  readonly openPaths?: readonly string[];
  /** The realm named in `WWW-Authenticate`. */
  readonly realm: string;
  /**
   * The status of a known token without the required scope: 403 `insufficient_scope` (RFC 6750,
   * the default), or 401 where the service's contract says a token it does not accept is invalid.
   */
  readonly scopeFailureStatus?: 401 | 403;
}

export type BearerCheck = 'ok' | 'invalid' | 'insufficient_scope';

/** Whether `token` is known and holds one of `required` (any known token when empty; `*` grants all). */
export function checkBearer(tokens: TokenStore, required: readonly string[], token: string): BearerCheck {
  const scopes = tokens.verify(token);
  if (scopes === undefined) return 'invalid';
  if (required.length > 0 && !scopes.has('*') && !required.some((s) => scopes.has(s)))
    return 'insufficient_scope';
  return 'ok';
}

export function authMiddleware(policy: AuthPolicy) {
  const required = policy.scopes ?? [];
  const isOpen = pathMatcher(policy.openPaths ?? []);
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (req.method === 'OPTIONS' || isOpen(req.path)) {
      next();
      return;
    }
    const header = req.headers.authorization;
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    const token = match?.[1];
    if (token === undefined) {
      next(
        new UnauthorizedError('Missing bearer token: send the header "Authorization: Bearer <token>"', {
          headers: { 'www-authenticate': `Bearer realm="${policy.realm}"` },
        }),
      );
      return;
    }
    const check = checkBearer(policy.tokens, required, token);
    if (check === 'invalid') {
      next(
        new UnauthorizedError('Invalid bearer token', {
          headers: { 'www-authenticate': `Bearer realm="${policy.realm}", error="invalid_token"` },
        }),
      );
      return;
    }
    if (check === 'insufficient_scope' && policy.scopeFailureStatus === 401) {
      next(
        new UnauthorizedError(`The token lacks the scope this service requires (${required.join(' or ')})`, {
          headers: {
            'www-authenticate': `Bearer realm="${policy.realm}", error="invalid_token", scope="${required.join(' ')}"`,
          },
        }),
      );
      return;
    }
    if (check === 'insufficient_scope') {
      next(
        new ForbiddenError(`The token lacks the scope this service requires (${required.join(' or ')})`, {
          code: 'insufficient_scope',
          headers: {
            'www-authenticate': `Bearer realm="${policy.realm}", error="insufficient_scope", scope="${required.join(' ')}"`,
          },
        }),
      );
      return;
    }
    next();
  };
}

export function pathMatcher(patterns: readonly string[]): (path: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.endsWith('/*')));
  const prefixes = patterns.filter((p) => p.endsWith('/*')).map((p) => p.slice(0, -1));
  return (path) => exact.has(path) || prefixes.some((p) => path.startsWith(p) || `${path}/` === p);
}

function store(grant: TokenGrant): StoredToken {
  return { digest: sha256(grant.token), scopes: new Set(grant.scopes) };
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}
