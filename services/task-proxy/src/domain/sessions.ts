/**
 * The server-side session store: in this replica's memory (the operator gives the proxy's Service
 * ClientIP affinity, so a browser keeps talking to the replica that signed it in). A session ends
 * after `idleMs` without use, `maxAgeMs` after sign-in, at sign-out, or when the store is full and
 * it is the least recently used. Ids are looked up by their SHA-256 (computed by the caller's
 * `digest`), so the map never holds a cookie's value.
 */

export interface Session {
  readonly user: string;
  readonly authenticated: true;
  /** Epoch ms. */
  readonly createdAt: number;
  lastSeenAt: number;
}

export type SessionEnd = 'signed_out' | 'expired' | 'evicted' | 'rotated';

export interface SessionStoreOptions {
  readonly idleMs: number;
  readonly maxAgeMs: number;
  readonly maxSessions: number;
  /** A new random id (the cookie value). */
  readonly newId: () => string;
  /** The key an id is stored under (a hash of it). */
  readonly digest: (id: string) => string;
  readonly onEnd?: (reason: SessionEnd) => void;
}

/** What a session id looks like: 32 random bytes in base64url. */
export const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export class SessionStore {
  /** Insertion order is recency: a touched session moves to the end. */
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly options: SessionStoreOptions) {}

  get size(): number {
    return this.sessions.size;
  }

  get idleMs(): number {
    return this.options.idleMs;
  }

  get maxAgeMs(): number {
    return this.options.maxAgeMs;
  }

  get maxSessions(): number {
    return this.options.maxSessions;
  }

  /**
   * Signs `user` in: a new session with a new id; the session of `previousId` (the cookie the
   * request came with, if any) ends, so an id planted before sign-in is worth nothing after it.
   */
  create(user: string, now: number, previousId?: string): { id: string; session: Session } {
    if (previousId !== undefined && this.remove(previousId)) this.options.onEnd?.('rotated');
    this.sweep(now);
    while (this.sessions.size >= this.options.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (oldest.done === true) break;
      this.sessions.delete(oldest.value);
      this.options.onEnd?.('evicted');
    }
    const id = this.options.newId();
    const session: Session = { user, authenticated: true, createdAt: now, lastSeenAt: now };
    this.sessions.set(this.options.digest(id), session);
    return { id, session };
  }

  /** The live session of `id` (touched), or undefined: unknown, malformed, forged or expired. */
  get(id: string | undefined, now: number): Session | undefined {
    if (id === undefined || !SESSION_ID.test(id)) return undefined;
    const key = this.options.digest(id);
    const session = this.sessions.get(key);
    if (session === undefined) return undefined;
    if (this.expired(session, now)) {
      this.sessions.delete(key);
      this.options.onEnd?.('expired');
      return undefined;
    }
    session.lastSeenAt = now;
    this.sessions.delete(key);
    this.sessions.set(key, session);
    return session;
  }

  /** Ends the session of `id` (sign-out); whether there was one. */
  destroy(id: string | undefined): boolean {
    if (id === undefined || !this.remove(id)) return false;
    this.options.onEnd?.('signed_out');
    return true;
  }

  /** Ends expired sessions; how many. */
  sweep(now: number): number {
    let ended = 0;
    for (const [key, session] of this.sessions) {
      if (!this.expired(session, now)) continue;
      this.sessions.delete(key);
      this.options.onEnd?.('expired');
      ended += 1;
    }
    return ended;
  }

  private remove(id: string): boolean {
    if (!SESSION_ID.test(id)) return false;
    return this.sessions.delete(this.options.digest(id));
  }

  private expired(session: Session, now: number): boolean {
    return (
      now - session.lastSeenAt >= this.options.idleMs || now - session.createdAt >= this.options.maxAgeMs
    );
  }
}
