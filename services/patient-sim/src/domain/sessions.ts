import type { Language } from '../schemas/case.js';
import type { Exchange } from './prompt.js';

/**
 * Conversations in memory: one replica's, lost on restart (documented). Idle sessions expire after
 * `ttlMs`; at most `maxSessions` live at once, and a new one beyond that is refused rather than an
 * old one dropped. A session with a turn in progress (`begin` .. `end`) is not idle: it neither
 * expires nor makes room, and its TTL counts from the end of its last turn. Time is passed in
 * (`now`, ms), so the store is pure and testable.
 */

export interface SessionTurn extends Exchange {
  readonly turn: number;
  /** Fact and finding ids this turn revealed for the first time. */
  readonly revealed: readonly string[];
  readonly at: number;
}

export interface Session {
  readonly id: string;
  readonly patientId: string;
  readonly language: Language;
  readonly createdAt: number;
  lastActiveAt: number;
  /** Turns in progress on it (`begin` .. `end`); while any is, it does not expire. */
  busy: number;
  readonly turns: SessionTurn[];
  /** Fact and finding ids revealed so far, in the order they were. */
  readonly revealed: string[];
  readonly usage: { promptTokens: number; completionTokens: number };
}

export type CreateResult =
  { readonly ok: true; readonly session: Session } | { readonly ok: false; readonly reason: 'capacity' };

export class SessionStore {
  private readonly sessions = new Map<string, Session>();

  constructor(
    readonly ttlMs: number,
    readonly maxSessions: number,
    readonly maxTurns: number,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** The live session, or undefined (an expired one is removed and reported through `onExpire`). */
  get(id: string, now: number, onExpire?: (s: Session) => void): Session | undefined {
    const s = this.sessions.get(id);
    if (s === undefined) return undefined;
    if (this.expired(s, now)) {
      this.sessions.delete(id);
      onExpire?.(s);
      return undefined;
    }
    return s;
  }

  create(id: string, patientId: string, language: Language, now: number): CreateResult {
    if (this.sessions.size >= this.maxSessions) this.sweep(now);
    if (this.sessions.size >= this.maxSessions) return { ok: false, reason: 'capacity' };
    const session: Session = {
      id,
      patientId,
      language,
      createdAt: now,
      lastActiveAt: now,
      busy: 0,
      turns: [],
      revealed: [],
      usage: { promptTokens: 0, completionTokens: 0 },
    };
    this.sessions.set(id, session);
    return { ok: true, session };
  }

  delete(id: string): boolean {
    return this.sessions.delete(id);
  }

  /** Removes expired sessions; returns them. */
  sweep(now: number): Session[] {
    const gone: Session[] = [];
    for (const s of this.sessions.values()) {
      if (this.expired(s, now)) {
        this.sessions.delete(s.id);
        gone.push(s);
      }
    }
    return gone;
  }

  /** When it expires if left idle from `now` on (a turn in progress counts as activity until now). */
  expiresAt(s: Session, now: number): number {
    return (s.busy > 0 ? Math.max(s.lastActiveAt, now) : s.lastActiveAt) + this.ttlMs;
  }

  /** A turn on the session starts: until its `end`, the session is not idle. */
  begin(s: Session): void {
    s.busy += 1;
  }

  /** The turn ended (answered or failed): the session's idle time counts from `now`. */
  end(s: Session, now: number): void {
    s.busy = Math.max(0, s.busy - 1);
    s.lastActiveAt = Math.max(s.lastActiveAt, now);
  }

  /** Records a completed turn: the exchange, newly revealed ids and token usage. */
  record(
    s: Session,
    exchange: Exchange,
    revealed: readonly string[],
    usage: { promptTokens: number; completionTokens: number },
    now: number,
  ): SessionTurn {
    const turn: SessionTurn = { ...exchange, turn: s.turns.length + 1, revealed: [...revealed], at: now };
    s.turns.push(turn);
    for (const id of revealed) if (!s.revealed.includes(id)) s.revealed.push(id);
    s.usage.promptTokens += usage.promptTokens;
    s.usage.completionTokens += usage.completionTokens;
    s.lastActiveAt = now;
    return turn;
  }

  private expired(s: Session, now: number): boolean {
    return s.busy === 0 && now >= this.expiresAt(s, now);
  }
}

/**
 * One turn at a time per session: a second message to the same session waits for the first, so
 * the history and the revealed facts stay in order. Keys are dropped when nothing waits on them.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  get keys(): number {
    return this.tails.size;
  }
}
