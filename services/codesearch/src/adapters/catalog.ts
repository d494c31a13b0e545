import type { Logger } from '@clinicalsuite/kit';
import { passageOf } from '../domain/passage.js';
import { applyOverlay, type OverlayEntry } from '../domain/overlay.js';
import { LexicalIndex } from '../domain/lexical-index.js';
import { CODE_TYPES, type CodeType, type SetMeta } from '../schemas/code-record.js';
import { damagedSetMessage, type CodeStore, type DamagedSet } from './code-store.js';
import type { Embedder } from './embedder.js';
import { VectorCache } from './vector-cache.js';

/**
 * What the service searches: the stored code sets with the curated Vietnamese terms laid over
 * them, as one lexical index, and (once an embedding model is loaded) the title vectors of the
 * types it embeds. A change in the store (an import) builds a new snapshot in the background and
 * swaps it in whole; searches in flight finish on the old one.
 */

export type VectorState =
  | { readonly state: 'waiting'; readonly reason: string }
  | { readonly state: 'building'; readonly done: number; readonly total: number }
  | {
      readonly state: 'ready';
      readonly vectors: Float32Array;
      readonly dim: number;
      readonly total: number;
      /** Read back from the vector cache, or embedded by this process. */
      readonly source: 'cache' | 'embedded';
    }
  | { readonly state: 'failed'; readonly reason: string }
  | { readonly state: 'off'; readonly reason: string };

export interface Snapshot {
  readonly index: LexicalIndex;
  readonly sets: ReadonlyMap<CodeType, SetMeta>;
  readonly vectors: Map<CodeType, VectorState>;
  readonly curatedApplied: number;
  /** Stored set files that cannot be read: not served (and never replaced by a built-in set). */
  readonly damaged: ReadonlyMap<CodeType, DamagedSet>;
}

export interface CatalogOptions {
  readonly store: CodeStore;
  readonly dataDir: string;
  readonly embedTypes: ReadonlySet<CodeType>;
  readonly batchSize: number;
  readonly logger: Logger;
}

export class Catalog {
  private current: Snapshot | undefined;
  private signature = '';
  private embedder: Embedder | undefined;
  private embedderReason = 'no embedding model configured';
  /** The model is still awaited or loading (vectors wait) rather than absent (vectors off). */
  private embedderPending = false;
  private overlay: readonly OverlayEntry[] = [];
  private readonly vectorCache: VectorCache;
  /** Aborted when the vectors being built are no longer wanted (new snapshot or model, close). */
  private vectorsWanted = new AbortController();
  private building: Promise<void> = Promise.resolve();
  private closed = false;
  private embeddedTitles = 0;

  constructor(private readonly options: CatalogOptions) {
    this.vectorCache = new VectorCache(options.dataDir);
  }

  get snapshot(): Snapshot | undefined {
    return this.current;
  }

  get model(): Embedder | undefined {
    return this.embedder;
  }

  /** Titles this process has embedded (not counting vectors read from the cache). */
  get titlesEmbedded(): number {
    return this.embeddedTitles;
  }

  /** Why there is no embedding model (when there is none). */
  get modelReason(): string {
    return this.embedderReason;
  }

  /** The curated terms laid over the sets from the next load on. */
  setOverlay(overlay: readonly OverlayEntry[]): void {
    this.overlay = overlay;
  }

  /** Loads the store now (first load, or after a change); resolves when the lexical index is in. */
  async load(): Promise<Snapshot> {
    const signature = await this.options.store.signature();
    const { sets, damaged } = await this.options.store.readAll();
    const records = sets.flatMap((s) => s.records);
    const { codes, unmatched } = applyOverlay(records, this.overlay);
    const index = new LexicalIndex(codes);
    const vectors = new Map<CodeType, VectorState>();
    for (const type of index.typeRanges.keys()) vectors.set(type, this.initialVectorState(type));
    const snapshot: Snapshot = {
      index,
      sets: new Map(sets.map((s) => [s.meta.type, s.meta])),
      vectors,
      curatedApplied: this.overlay.length - unmatched.length,
      damaged: new Map(damaged.map((d) => [d.type, d])),
    };
    this.current = snapshot;
    this.signature = signature;
    for (const d of damaged) this.options.logger.error({ type: d.type, path: d.file }, damagedSetMessage(d));
    this.options.logger.info(
      { codes: index.size, terms: index.vocabularySize, types: [...index.typeRanges.keys()] },
      'code sets loaded',
    );
    this.startVectors();
    return snapshot;
  }

  /** Reloads when the store changed since the last load; true when it did. */
  async reloadIfChanged(): Promise<boolean> {
    if ((await this.options.store.signature()) === this.signature) return false;
    await this.load();
    return true;
  }

  /** Sets (or clears, with a reason) the embedding model; vectors are built for it. */
  setEmbedder(embedder: Embedder | undefined, reason?: string, pending = false): void {
    this.embedder = embedder;
    this.embedderPending = embedder === undefined && pending;
    if (reason !== undefined) this.embedderReason = reason;
    const snap = this.current;
    if (snap === undefined) return;
    for (const type of snap.index.typeRanges.keys()) snap.vectors.set(type, this.initialVectorState(type));
    this.startVectors();
  }

  private initialVectorState(type: CodeType): VectorState {
    if (!this.options.embedTypes.has(type))
      return { state: 'off', reason: `${type} is not in CODESEARCH_EMBED_TYPES` };
    if (this.embedder === undefined)
      return { state: this.embedderPending ? 'waiting' : 'off', reason: this.embedderReason };
    return { state: 'waiting', reason: 'queued for embedding' };
  }

  private startVectors(): void {
    this.vectorsWanted.abort();
    const wanted = new AbortController();
    this.vectorsWanted = wanted;
    const snap = this.current;
    const embedder = this.embedder;
    if (snap === undefined || embedder === undefined || this.closed) return;
    this.building = this.building
      .then(async () => {
        for (const type of CODE_TYPES) {
          if (wanted.signal.aborted) return;
          if (snap.vectors.get(type)?.state !== 'waiting') continue;
          try {
            await this.buildVectors(snap, type, embedder, wanted.signal);
          } catch (err) {
            snap.vectors.set(type, { state: 'failed', reason: (err as Error).message });
            this.options.logger.error({ err, type }, 'embedding the code titles failed');
          }
        }
      })
      .catch(() => undefined);
  }

  private async buildVectors(
    snap: Snapshot,
    type: CodeType,
    embedder: Embedder,
    signal: AbortSignal,
  ): Promise<void> {
    const [start, end] = snap.index.typeRanges.get(type) ?? [0, 0];
    const texts = snap.index.docs.slice(start, end).map(passageOf);
    const key = VectorCache.key(embedder.id, type, texts);
    const dim = embedder.dim;
    const total = texts.length;
    const cached = await this.vectorCache.read(key, total, dim);
    if (cached !== null) {
      snap.vectors.set(type, { state: 'ready', vectors: cached, dim, total, source: 'cache' });
      this.options.logger.info({ type, codes: total }, 'code title vectors read from the cache');
      return;
    }
    if (signal.aborted) return;
    const started = performance.now();
    this.options.logger.info(
      { type, codes: total, workers: embedder.workers, batch: this.options.batchSize },
      'embedding the code titles on worker threads',
    );
    snap.vectors.set(type, { state: 'building', done: 0, total });
    let counted = 0;
    const vectors = await embedder.embedPassages(texts, {
      batchSize: this.options.batchSize,
      signal,
      onProgress: (done) => {
        this.embeddedTitles += done - counted;
        counted = done;
        snap.vectors.set(type, { state: 'building', done, total });
      },
    });
    if (vectors === null) return;
    await this.vectorCache.write(key, vectors);
    snap.vectors.set(type, { state: 'ready', vectors, dim, total, source: 'embedded' });
    const seconds = (performance.now() - started) / 1000;
    this.options.logger.info(
      {
        type,
        codes: total,
        seconds: Math.round(seconds * 10) / 10,
        titles_per_second: Math.round(total / Math.max(seconds, 0.001)),
      },
      'code title vectors built',
    );
  }

  /** Resolves when the vectors queued so far are built (tests, benchmarks). */
  async vectorsSettled(): Promise<void> {
    let seen: Promise<void> | undefined;
    while (seen !== this.building) {
      seen = this.building;
      await seen;
    }
  }

  /** Stops a build (after the batches in hand), ends its worker threads, releases the model. */
  async close(): Promise<void> {
    this.closed = true;
    this.vectorsWanted.abort();
    await this.building;
    await this.embedder?.dispose();
    this.embedder = undefined;
  }
}
