import type { People } from './people.js';

/**
 * The registry in memory, kept in step with the store it mirrors (SQLite, or PostgreSQL shared by
 * several replicas). Changes arrive out of order with the reads that follow them (a notification
 * while a person or the whole registry is being read, a delete while the models load), so every
 * read is fenced by a sequence number taken when it starts:
 *
 * - `deleted(id)` drops the person at once, and any read of that person (or of the whole registry)
 *   that started before it is not applied to them: a deleted person is never put back.
 * - `changed(id)` reloads the person, one read at a time per person; changes that arrive during a
 *   read are coalesced into one more read, so the last read applied began after the last change.
 * - `load()` reads the whole registry into a fresh index and swaps it in, one load at a time
 *   (requests made during one coalesce into one more); persons changed during it are then reloaded.
 *
 * The store commits before it says so (NOTIFY is sent on commit; a local delete returns after its
 * commit), so a read begun after a change sees it.
 */

export interface MirroredPerson {
  readonly id: number;
  readonly name: string;
}

export interface MirrorSource {
  /** Every person of the running model and their embeddings. */
  loadAll(): Promise<{
    persons: readonly MirroredPerson[];
    embeddings: readonly { readonly personId: number; readonly vector: Float32Array }[];
  }>;
  /** One person and their embeddings, or null when gone. */
  loadPerson(id: number): Promise<{ person: MirroredPerson; embeddings: readonly Float32Array[] } | null>;
}

export interface MirrorOptions {
  /** A read of one person failed (it is retried after `retryDelay`). */
  readonly onError?: (error: unknown, personId: number) => void;
  /** Waits before the `attempt`-th retry of a failed read of one person. */
  readonly retryDelay: (attempt: number) => Promise<void>;
}

export class RegistryMirror {
  private source: MirrorSource | undefined;
  private createPeople: (() => People) | undefined;
  private current: People | undefined;
  private closed = false;
  /** Bumped by every change; a read records it when it starts. */
  private seq = 0;
  private readonly lastChange = new Map<number, number>();
  private readonly lastDelete = new Map<number, number>();
  /** The running reload of each person. */
  private readonly reloading = new Map<number, Promise<void>>();
  private fullActive = 0;
  private fullTail: Promise<void> = Promise.resolve();
  private fullQueued: Promise<void> | undefined;

  constructor(private readonly options: MirrorOptions) {}

  /** The index, once a load has filled one. */
  get people(): People | undefined {
    return this.current;
  }

  /** Where to read from and how to make an empty index (once the recognizer is known). */
  open(source: MirrorSource, createPeople: () => People): void {
    this.source = source;
    this.createPeople = createPeople;
  }

  /** The person was deleted from the store (committed): drop them now and from every read in flight. */
  deleted(personId: number): void {
    this.seq++;
    this.current?.remove(personId);
    if (this.busy) this.lastDelete.set(personId, this.seq);
  }

  /**
   * The person changed in the store (committed): resolves once a read of them begun after this
   * call is in the index (or they were deleted meanwhile).
   */
  changed(personId: number): Promise<void> {
    this.seq++;
    if (this.source === undefined || this.closed) return Promise.resolve();
    this.lastChange.set(personId, this.seq);
    let running = this.reloading.get(personId);
    if (running === undefined) {
      running = this.reloadPerson(personId);
      this.reloading.set(personId, running);
    }
    return running;
  }

  /** Reads the whole registry into a fresh index and swaps it in (serialized, coalesced). */
  load(): Promise<void> {
    if (this.fullQueued !== undefined) return this.fullQueued;
    const queued = this.fullTail.then(() => {
      // Started: a request from now on needs a load that begins after it.
      this.fullQueued = undefined;
      return this.loadAll();
    });
    this.fullQueued = queued;
    this.fullTail = queued.catch(() => undefined);
    return queued;
  }

  /** Stops retrying reads. */
  close(): void {
    this.closed = true;
  }

  private get busy(): boolean {
    return this.fullActive > 0 || this.reloading.size > 0;
  }

  private deletedSince(personId: number, seq: number): boolean {
    return (this.lastDelete.get(personId) ?? 0) > seq;
  }

  private async loadAll(): Promise<void> {
    const source = this.source;
    const createPeople = this.createPeople;
    if (source === undefined || createPeople === undefined)
      throw new Error('the registry mirror is not open');
    this.fullActive++;
    try {
      const startedAt = this.seq;
      const stored = await source.loadAll();
      const byPerson = new Map<number, Float32Array[]>();
      for (const e of stored.embeddings) {
        const list = byPerson.get(e.personId);
        if (list === undefined) byPerson.set(e.personId, [e.vector]);
        else list.push(e.vector);
      }
      const fresh = createPeople();
      for (const p of stored.persons) {
        if (!this.deletedSince(p.id, startedAt)) fresh.add(p.id, p.name, byPerson.get(p.id) ?? []);
      }
      this.current = fresh;
      // Changed while the registry was read: the snapshot may predate the change.
      const since = [...this.lastChange].filter(([, seq]) => seq > startedAt).map(([id]) => id);
      for (const id of since) {
        this.changed(id).catch((error: unknown) => this.options.onError?.(error, id));
      }
    } finally {
      this.fullActive--;
      this.prune();
    }
  }

  private async reloadPerson(personId: number): Promise<void> {
    const source = this.source as MirrorSource;
    try {
      for (let attempt = 0; !this.closed;) {
        const startedAt = this.seq;
        let found: Awaited<ReturnType<MirrorSource['loadPerson']>>;
        try {
          found = await source.loadPerson(personId);
        } catch (error) {
          this.options.onError?.(error, personId);
          attempt++;
          await this.options.retryDelay(attempt);
          continue;
        }
        attempt = 0;
        const people = this.current;
        if (people !== undefined && !this.deletedSince(personId, startedAt)) {
          people.remove(personId);
          if (found !== null) people.add(found.person.id, found.person.name, found.embeddings);
        }
        if ((this.lastChange.get(personId) ?? 0) <= startedAt) return;
      }
    } finally {
      // Synchronously with the last check: a change after it starts a new reload.
      this.reloading.delete(personId);
      this.prune();
    }
  }

  /** With no read in flight, no fence is needed. */
  private prune(): void {
    if (this.busy) return;
    this.lastChange.clear();
    this.lastDelete.clear();
  }
}
