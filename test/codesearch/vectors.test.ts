/** @jest-environment ./test/face/ort-environment.cjs */
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { CodeStore } from '../../services/codesearch/src/adapters/code-store.js';
import { readIcd10CmTabular } from '../../services/codesearch/src/adapters/icd10cm-xml.js';
import { importCodeSet } from '../../services/codesearch/src/adapters/importer.js';
import { passageOf } from '../../services/codesearch/src/domain/passage.js';
import {
  ensureCodesearchModels,
  modelPath,
  search,
  startCodesearch,
  waitForModel,
  type CodesearchTestServer,
} from './helpers.js';

// The title vectors with the real MiniLM (int8 ONNX) over 2,000 real ICD-10-CM titles spread
// evenly over the set (short and long ones): built on worker threads while the service answers
// promptly, the same vectors as the main thread's embedder makes, cached, and read back by the next
// start without embedding a single title.

const CODES = 2000;
/** Bounds while the vectors build: the event loop's 99th-percentile delay, the slowest answer. */
const STALL_P99_MS = 100;
const ANSWER_MS = 500;
let setDir: string;

/** A fresh DATA_DIR holding the 2,000-code set and no vectors. */
async function freshDataDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'codesearch-vectors-'));
  const imported = await importCodeSet(new CodeStore(dir), {
    type: 'ICD10',
    file: join(setDir, 'icd10-spread.jsonl'),
  });
  if (!imported.ok) throw new Error(JSON.stringify(imported.errors));
  return dir;
}

async function startWithModel(dataDir: string): Promise<CodesearchTestServer> {
  const srv = await startCodesearch({
    DATA_DIR: dataDir,
    CODESEARCH_BUILTIN_SETS: 'false',
    CODESEARCH_RELOAD_POLL_MS: '0',
    CODESEARCH_EMBEDDER: 'minilm',
  });
  await waitForModel(srv, 5);
  return srv;
}

type VectorStatus = { state: string; done: number | null; total: number | null; source: string | null };
const icd10Vectors = async (url: string): Promise<VectorStatus> => {
  const body = (await (await fetch(`${url}/code_types`)).json()) as {
    types: { type: string; vectors: VectorStatus }[];
  };
  const icd = body.types.find((t) => t.type === 'ICD10');
  if (icd === undefined) throw new Error('no ICD10 in /code_types');
  return icd.vectors;
};
const embeddedTotal = async (url: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^codesearch_titles_embedded_total(?:\{[^}]*\})? (\d+)$/m.exec(text);
  if (m === null) throw new Error('no codesearch_titles_embedded_total in /metrics');
  return Number(m[1]);
};
const readyVectors = (srv: CodesearchTestServer): Float32Array => {
  const v = srv.service.catalog.snapshot?.vectors.get('ICD10');
  if (v?.state !== 'ready') throw new Error(`ICD10 vectors are ${v?.state ?? 'missing'}`);
  return v.vectors;
};

beforeAll(async () => {
  await ensureCodesearchModels([
    'codesearch-icd10cm',
    'codesearch-embedder',
    'codesearch-embedder-tokenizer',
  ]);
  const all = await readIcd10CmTabular(modelPath('codesearch-icd10cm'));
  const step = all.length / CODES;
  const spread = Array.from({ length: CODES }, (_, i) => all[Math.floor(i * step)]!);
  setDir = mkdtempSync(join(tmpdir(), 'codesearch-vectors-set-'));
  writeFileSync(
    join(setDir, 'icd10-spread.jsonl'),
    spread.map((r) => JSON.stringify({ ...r, parent: null })).join('\n'),
  );
}, 300_000);

describe('codesearch title vectors (real MiniLM, 2,000 real ICD-10-CM titles)', () => {
  let dataDir: string;
  let built: Float32Array;

  it('builds them off the event loop: /livez, /health and lexical searches answer promptly meanwhile', async () => {
    dataDir = await freshDataDir();
    const srv = await startWithModel(dataDir);
    try {
      // The first fetch of a process loads its HTTP client: not the service's time.
      await fetch(`${srv.url}/livez`);
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      let slowest = { ms: 0, what: '' };
      let duringBuild = 0;
      const settled = new AbortController();
      const timed = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
        const started = performance.now();
        const out = await call();
        const ms = performance.now() - started;
        if (ms > slowest.ms) slowest = { ms: Math.round(ms), what };
        return out;
      };
      const probe = (async () => {
        while (!settled.signal.aborted) {
          const live = await timed('GET /livez', () => fetch(`${srv.url}/livez`));
          expect(live.status).toBe(200);
          await timed('GET /health', () => fetch(`${srv.url}/health`).then((r) => r.json()));
          const { body } = await timed('POST /search', () => search(srv.url, { query: 'asthma' }));
          if (/being built/.test(body.mode_reason ?? '')) {
            expect(body.mode).toBe('lexical');
            expect(body.results[0]?.code).toMatch(/^J45/);
            duringBuild++;
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await srv.service.catalog.vectorsSettled();
      settled.abort();
      await probe;
      loop.disable();
      const p99 = Math.round(loop.percentile(99) / 1e6);
      const max = Math.round(loop.max / 1e6);
      console.log(
        `while ${CODES} titles were embedded: event loop delay p99 ${p99} ms, max ${max} ms; ` +
          `slowest answer ${slowest.ms} ms (${slowest.what}); ${duringBuild} searches answered lexically`,
      );
      // Measured on this 2-core machine under other work: p99 13-32 ms, max 36-259 ms, slowest
      // answer 59-293 ms (the worst ones waiting for a core, not for the model). With the titles
      // embedded on the event loop: p99 0.9-1.1 s, every batch of long titles a stall of 0.5-1.5 s.
      expect(p99).toBeLessThan(STALL_P99_MS);
      expect(slowest.ms).toBeLessThan(ANSWER_MS);
      expect(duringBuild).toBeGreaterThan(5);

      expect(await icd10Vectors(srv.url)).toEqual({
        state: 'ready',
        done: CODES,
        total: CODES,
        reason: null,
        source: 'embedded',
      });
      expect(await embeddedTotal(srv.url)).toBe(CODES);
      expect(srv.logs.filter((l) => l['msg'] === 'code title vectors built')).toHaveLength(1);
      expect((await search(srv.url, { query: 'belly pain' })).body.mode).toBe('hybrid');

      // The worker threads' vectors are the main thread's: a sample embedded one by one there.
      built = readyVectors(srv).slice();
      const snap = srv.service.catalog.snapshot!;
      const [start, end] = snap.index.typeRanges.get('ICD10')!;
      const texts = snap.index.docs.slice(start, end).map(passageOf);
      const embedder = srv.service.catalog.model!;
      const dim = embedder.dim;
      for (let i = 0; i < texts.length; i += 97) {
        const [one] = await embedder.embed([texts[i]!], 'passage');
        let cosine = 0;
        for (let k = 0; k < dim; k++) cosine += one![k]! * built[i * dim + k]!;
        expect({ i, cosine: cosine > 0.999 }).toEqual({ i, cosine: true });
      }
    } finally {
      await srv.close();
    }
  }, 300_000);

  it('reads them back at the next start without embedding a single title', async () => {
    const srv = await startWithModel(dataDir);
    try {
      await srv.service.catalog.vectorsSettled();
      expect(await icd10Vectors(srv.url)).toEqual({
        state: 'ready',
        done: CODES,
        total: CODES,
        reason: null,
        source: 'cache',
      });
      expect(await embeddedTotal(srv.url)).toBe(0);
      const msgs = srv.logs.map((l) => l['msg']);
      expect(msgs).toContain('code title vectors read from the cache');
      expect(msgs).not.toContain('embedding the code titles on worker threads');
      const again = readyVectors(srv);
      expect(
        Buffer.from(again.buffer, again.byteOffset, again.byteLength).equals(Buffer.from(built.buffer)),
      ).toBe(true);
      const { body } = await search(srv.url, { query: 'belly pain' });
      expect(body.mode).toBe('hybrid');
      expect(body.results[0]?.code).toMatch(/^R10/);
    } finally {
      await srv.close();
    }
  }, 120_000);

  it('stops a build on close: the worker threads end, nothing half-built is cached', async () => {
    const dir = await freshDataDir();
    const srv = await startWithModel(dir);
    let closed = false;
    try {
      const until = Date.now() + 120_000;
      for (;;) {
        const v = await icd10Vectors(srv.url);
        if (v.state === 'building' && (v.done ?? 0) > 0) break;
        if (Date.now() > until) throw new Error(`the build did not start: ${JSON.stringify(v)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      // Worker threads are threads of this process.
      const threadsBuilding = readdirSync('/proc/self/task').length;
      const workers = srv.service.catalog.model!.workers;
      const started = performance.now();
      await srv.close();
      closed = true;
      // After the batches in hand (each well under a second here).
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(srv.service.catalog.snapshot?.vectors.get('ICD10')?.state).toBe('building');
      let cached: string[] = [];
      try {
        cached = readdirSync(join(dir, 'codesearch', 'vectors'));
      } catch {
        // No folder: nothing cached.
      }
      expect(cached).toEqual([]);
      expect(readdirSync('/proc/self/task').length).toBeLessThanOrEqual(threadsBuilding - workers);
    } finally {
      if (!closed) await srv.close();
    }
  }, 180_000);
});
