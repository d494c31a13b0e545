import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Catalog } from './adapters/catalog.js';

/** The code search service's metrics (`codesearch_` prefix). */

export interface CodesearchMetrics {
  readonly searches: Counter<'mode'>;
  readonly stage: Histogram<'stage'>;
  readonly imports: Counter<'result'>;
}

export function createCodesearchMetrics(
  kit: KitMetrics,
  sources: {
    codes: () => Map<string, number>;
    vectors: () => Map<string, number>;
    titlesEmbedded: () => number;
  },
): CodesearchMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}codes`,
    help: 'Codes loaded, by type.',
    labelNames: ['type'] as const,
    registers,
    collect() {
      this.reset();
      for (const [type, n] of sources.codes()) this.set({ type }, n);
    },
  });
  new Gauge({
    name: `${p}embedded_codes`,
    help: 'Codes whose title vectors are ready, by type.',
    labelNames: ['type'] as const,
    registers,
    collect() {
      this.reset();
      for (const [type, n] of sources.vectors()) this.set({ type }, n);
    },
  });
  new Counter({
    name: `${p}titles_embedded_total`,
    help: 'Code titles embedded by this process (vectors read back from the cache are not counted).',
    registers,
    collect() {
      this.reset();
      this.inc(sources.titlesEmbedded());
    },
  });
  const searches = new Counter({
    name: `${p}searches_total`,
    help: 'Searches answered, by the mode that ran (hybrid, lexical).',
    labelNames: ['mode'] as const,
    registers,
  });
  for (const mode of ['hybrid', 'lexical']) searches.inc({ mode }, 0);
  const imports = new Counter({
    name: `${p}reloads_total`,
    help: 'Code-set reloads after an import, by result (ok, error).',
    labelNames: ['result'] as const,
    registers,
  });
  return {
    searches,
    imports,
    stage: new Histogram({
      name: `${p}search_duration_seconds`,
      help: 'Time per search stage: lexical, embed (the query), semantic (vector scan), fuse.',
      labelNames: ['stage'] as const,
      buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    }),
  };
}

/** The gauges' readings from the catalog: codes and ready title vectors by type, titles embedded. */
export function catalogGauges(catalog: Catalog): Parameters<typeof createCodesearchMetrics>[1] {
  return {
    codes: () => {
      const out = new Map<string, number>();
      for (const [t, [a, b]] of catalog.snapshot?.index.typeRanges ?? []) out.set(t, b - a);
      return out;
    },
    vectors: () => {
      const out = new Map<string, number>();
      for (const [t, v] of catalog.snapshot?.vectors ?? []) out.set(t, v.state === 'ready' ? v.total : 0);
      return out;
    },
    titlesEmbedded: () => catalog.titlesEmbedded,
  };
}
