import type { ChatMessage, ConcreteIntent, Role } from './types.js';

/**
 * Multi-turn sessions, in memory (one replica: the operator gives the agent's Service ClientIP
 * affinity; see the README). A session idle for `ttlMs` is forgotten; past `maxSessions` the least
 * recently used one is dropped; each keeps its last `maxMessages` messages. Pure: time comes in as
 * arguments. The Map's insertion order is the recency order (a touched session is re-inserted).
 */

export interface SessionMessage {
  readonly role: Exclude<Role, 'system'>;
  readonly content: string;
  /** Epoch ms. */
  readonly timestamp: number;
  /** For assistant messages: the intent and the model (upstream id or sub-service) that answered. */
  readonly intent?: ConcreteIntent;
  readonly model?: string;
}

export interface Session {
  readonly id: string;
  readonly createdAt: number;
  updatedAt: number;
  readonly messages: SessionMessage[];
  lastIntent: ConcreteIntent | null;
  lastModel: string | null;
}

export type EndReason = 'deleted' | 'expired' | 'evicted';

export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  /** Sessions ended by delete(): a turn that began on one does not bring it back. */
  private readonly deleted = new WeakSet<Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxSessions: number,
    private readonly maxMessages: number,
    /** Called once per session that ends other than by delete (metrics). */
    private readonly onEnd: (reason: EndReason) => void = () => undefined,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** The live session, or undefined (an expired one is removed on the way). */
  get(id: string, now: number): Session | undefined {
    const s = this.sessions.get(id);
    if (s === undefined) return undefined;
    if (now - s.updatedAt > this.ttlMs) {
      this.sessions.delete(id);
      this.onEnd('expired');
      return undefined;
    }
    return s;
  }

  /** The live session, or undefined; changes nothing (a turn reads its history before it succeeds). */
  peek(id: string, now: number): Session | undefined {
    const s = this.sessions.get(id);
    return s === undefined || now - s.updatedAt > this.ttlMs ? undefined : s;
  }

  /** The session `id` (created when absent or expired), marked as used now. */
  open(id: string, now: number): { session: Session; created: boolean } {
    let session = this.get(id, now);
    const created = session === undefined;
    if (session === undefined) {
      session = { id, createdAt: now, updatedAt: now, messages: [], lastIntent: null, lastModel: null };
      while (this.sessions.size >= this.maxSessions) {
        const oldest = this.sessions.keys().next().value;
        if (oldest === undefined) break;
        this.sessions.delete(oldest);
        this.onEnd('evicted');
      }
    } else {
      this.sessions.delete(id);
    }
    session.updatedAt = now;
    this.sessions.set(id, session);
    return { session, created };
  }

  /** Appends a user message and its reply (one exchange), keeping the newest `maxMessages`. */
  record(session: Session, exchange: readonly SessionMessage[], now: number): void {
    session.messages.push(...exchange);
    const excess = session.messages.length - this.maxMessages;
    if (excess > 0) session.messages.splice(0, excess);
    const last = exchange[exchange.length - 1];
    if (last?.intent !== undefined) session.lastIntent = last.intent;
    if (last?.model !== undefined) session.lastModel = last.model;
    session.updatedAt = now;
    // Used now: it moves to the recent end, so the Map's order stays the recency order that
    // eviction and sweep() rely on (while it is still held: a deleted session stays deleted).
    if (this.sessions.get(session.id) === session) {
      this.sessions.delete(session.id);
      this.sessions.set(session.id, session);
    }
  }

  delete(id: string): boolean {
    const session = this.sessions.get(id);
    if (session === undefined) return false;
    this.sessions.delete(id);
    this.deleted.add(session);
    return true;
  }

  /**
   * Whether `session` (as a turn read it when it began) was deleted since: a delete is the intent to
   * forget, so the turn's exchange must not re-create it. One that expired or was evicted was not
   * deleted: the turn's success opens it again.
   */
  wasDeleted(session: Session | undefined): boolean {
    return session !== undefined && this.deleted.has(session);
  }

  /** Live sessions, most recently used first. */
  list(now: number): Session[] {
    this.sweep(now);
    return [...this.sessions.values()].reverse();
  }

  /** Forgets expired sessions; returns how many. */
  sweep(now: number): number {
    let n = 0;
    // Recency order: the first live one ends the scan.
    for (const [id, s] of this.sessions) {
      if (now - s.updatedAt <= this.ttlMs) break;
      this.sessions.delete(id);
      this.onEnd('expired');
      n++;
    }
    return n;
  }
}

/**
 * A conservative token estimate without the model's tokenizer: UTF-8 bytes / 3 (English runs about
 * 4 bytes a token, Vietnamese with diacritics 2.5 to 3.5) plus the chat template's few tokens per
 * message. Over-estimating only trims history a little early; under-estimating would overflow.
 */
export function estimateTokens(message: ChatMessage): number {
  return Math.ceil(Buffer.byteLength(message.content, 'utf8') / 3) + 6;
}

export interface FitResult {
  /** The history messages kept (the newest that fit), in order. */
  readonly kept: readonly ChatMessage[];
  /** How many older history messages were left out. */
  readonly dropped: number;
  /** Estimated prompt tokens of system + kept + current. */
  readonly promptTokens: number;
}

/**
 * Keeps the newest history that fits `contextTokens - maxTokens` together with the system prompt
 * and the current message, dropping whole exchanges from the oldest end (a reply is never kept
 * without the message it answered). Returns null when the system prompt and the current message
 * alone do not fit, with how many tokens they are over.
 */
export function fitHistory(
  system: readonly ChatMessage[],
  history: readonly ChatMessage[],
  current: readonly ChatMessage[],
  contextTokens: number,
  maxTokens: number,
): FitResult | { readonly overBy: number } {
  const budget = contextTokens - maxTokens;
  const fixed = [...system, ...current].reduce((n, m) => n + estimateTokens(m), 0);
  if (fixed > budget) return { overBy: fixed - budget };
  let used = fixed;
  let start = history.length;
  for (let i = history.length - 1; i >= 0; i--) {
    const cost = estimateTokens(history[i] as ChatMessage);
    if (used + cost > budget) break;
    used += cost;
    start = i;
  }
  // Never begin with an assistant message: its question would be missing.
  for (let m = history[start]; m !== undefined && m.role === 'assistant'; m = history[start]) {
    used -= estimateTokens(m);
    start++;
  }
  return { kept: history.slice(start), dropped: start, promptTokens: used };
}
