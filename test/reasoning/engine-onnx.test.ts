/** @jest-environment ./test/face/ort-environment.cjs */
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { EngineResult, Finding } from '../../services/reasoning/src/domain/types.js';
import {
  buildScoringGraph,
  buildScoringGraphFiles,
  compileModel,
  encodeFindings,
  EXTERNAL_TABLE_ALIGNMENT,
  EngineUnavailableError,
  FindingsError,
  identityCalibration,
  loadEngine,
  OnnxEngine,
  ReferenceEngine,
  scoreEvidence,
  type CompiledModel,
} from '../../services/reasoning/src/engine/index.js';
import { randomSyntheticKb, seeded, SYNTHETIC_KB } from './fixtures/synthetic-kb.js';

// The generated ONNX graph in onnxruntime-node (CPU here) against the reference math, on SYNTHETIC
// knowledge bases (not clinical data).

const KB = randomSyntheticKb({ conditions: 30, features: 120, seed: 11 });
const MODEL: CompiledModel = compileModel(KB, { ...identityCalibration(KB), alpha: 0.6 });

function randomFindings(rand: () => number, count: number): Finding[] {
  return Array.from({ length: count }, () => ({
    feature: `syn-f${Math.floor(rand() * 120)}`,
    present: rand() < 0.6,
    certainty: rand() < 0.3 ? Math.round(rand() * 100) / 100 : 1,
  }));
}

const LISTS: Finding[][] = (() => {
  const rand = seeded(5);
  return Array.from({ length: 40 }, (_, i) => randomFindings(rand, 1 + (i % 12)));
})();

describe('OnnxEngine', () => {
  let engine: OnnxEngine;
  beforeAll(async () => {
    engine = await OnnxEngine.create(MODEL, { threads: 1 });
  });
  afterAll(async () => {
    await engine.dispose();
  });

  it('runs on the CPU provider and says so', () => {
    expect(engine.info).toEqual({
      kind: 'onnxruntime',
      device: 'cpu',
      requestedDevice: 'cpu',
      modelVersion: `${KB.id}@1+nb-leak+alpha=0.6`,
      fingerprint: MODEL.fingerprint,
    });
  });

  it('computes what the reference computes: llr, posterior and gains to ~1e-6', async () => {
    const evidence = LISTS.map((l) => encodeFindings(MODEL, l));
    const raw = await engine.runEvidence(evidence);
    const H = MODEL.hypotheses;
    const F = MODEL.features.length;
    let posterior = 0;
    let gain = 0;
    let llr = 0;
    evidence.forEach((e, row) => {
      const ref = scoreEvidence(MODEL, e);
      for (let h = 0; h < H; h++) {
        posterior = Math.max(posterior, Math.abs(raw.posterior[row * H + h]! - ref.posterior[h]!));
        llr = Math.max(
          llr,
          Math.abs(raw.llr[row * H + h]! - ref.llr[h]!) / Math.max(1, Math.abs(ref.llr[h]!)),
        );
      }
      for (let f = 0; f < F; f++) gain = Math.max(gain, Math.abs(raw.gain[row * F + f]! - ref.gains[f]!));
    });
    expect(posterior).toBeLessThan(1e-6);
    expect(gain).toBeLessThan(1e-6);
    expect(llr).toBeLessThan(1e-6);
  });

  it('gives the reference engine’s results: ranking, probabilities (sum 1 with the unknown mass), contributions, next findings', async () => {
    const reference = new ReferenceEngine(MODEL);
    for (const findings of LISTS.slice(0, 10)) {
      const [onnx, ref] = await Promise.all([engine.score(findings), reference.score(findings)]);
      expect(onnx.ranked.length).toBe(30);
      const total = onnx.ranked.reduce((s, r) => s + r.probability, 0) + onnx.unknown;
      expect(Math.abs(total - 1)).toBeLessThan(1e-5);
      expect(Math.abs(onnx.unknown - ref.unknown)).toBeLessThan(1e-6);
      const byCondition = new Map(ref.ranked.map((r) => [r.condition, r]));
      for (const r of onnx.ranked) {
        expect(Math.abs(r.probability - byCondition.get(r.condition)!.probability)).toBeLessThan(1e-6);
        expect(r.contributions).toEqual(byCondition.get(r.condition)!.contributions);
      }
      expect(onnx.ranked.slice(0, 3).map((r) => r.condition)).toEqual(
        ref.ranked.slice(0, 3).map((r) => r.condition),
      );
      expect(onnx.nextFindings.map((n) => n.feature)).toEqual(ref.nextFindings.map((n) => n.feature));
    }
  });

  it('is deterministic: the same findings give the same bits, on this engine and on a new one', async () => {
    const again = await OnnxEngine.create(MODEL, { threads: 2 });
    try {
      for (const findings of LISTS.slice(0, 5)) {
        const a = await engine.score(findings);
        const b = await engine.score(findings);
        const c = await again.score(findings);
        expect(b).toEqual(a);
        expect(c).toEqual(a);
      }
    } finally {
      await again.dispose();
    }
  });

  it('scores 20 concurrent requests in fewer runs than 20, each exactly as alone', async () => {
    const alone: EngineResult[] = [];
    for (const findings of LISTS.slice(0, 20)) alone.push(await engine.score(findings));
    const before = engine.stats();
    const together = await Promise.all(LISTS.slice(0, 20).map((findings) => engine.score(findings)));
    const after = engine.stats();
    expect(after.requestsScored - before.requestsScored).toBe(20);
    expect(after.runs - before.runs).toBeLessThan(20);
    expect(after.runs - before.runs).toBe(1);
    expect(together).toEqual(alone);
  });

  it('splits a queue longer than maxBatch into runs of maxBatch, the rest run when the first ends', async () => {
    const small = await OnnxEngine.create(MODEL, { maxBatch: 8, batchWindowMs: 5 });
    try {
      const results = await Promise.all(LISTS.slice(0, 20).map((findings) => small.score(findings)));
      expect(results).toHaveLength(20);
      expect(small.stats()).toEqual({ runs: 3, requestsScored: 20, largestBatch: 8 });
    } finally {
      await small.dispose();
    }
  });

  it('scores a batch in one run and reports runs to onRun', async () => {
    const seen: number[] = [];
    const observed = await OnnxEngine.create(MODEL, { onRun: (r) => seen.push(r.batchSize) });
    try {
      const results = await observed.scoreBatch(LISTS.slice(0, 12), { maxRanked: 3, maxNextFindings: 2 });
      expect(results.map((r) => r.ranked.length)).toEqual(new Array(12).fill(3));
      expect(results.every((r) => r.nextFindings.length === 2)).toBe(true);
      expect(seen).toEqual([12]);
    } finally {
      await observed.dispose();
    }
  });

  it('refuses findings it cannot score before queueing them', async () => {
    const before = engine.stats().runs;
    await expect(
      engine.score([{ feature: 'syn-unheard-of', present: true, certainty: 1 }]),
    ).rejects.toBeInstanceOf(FindingsError);
    await expect(
      engine.scoreBatch([LISTS[0]!, [{ feature: 'syn-f1', present: true, certainty: -1 }]]),
    ).rejects.toThrow(/certainty/);
    expect(engine.stats().runs).toBe(before);
  });

  it('lets the run in flight finish when disposed', async () => {
    const full = await OnnxEngine.create(MODEL, { maxBatch: 4, batchWindowMs: 50 });
    const running = full.scoreBatch(LISTS.slice(0, 4)); // a full batch runs at once
    const waiting = full.score(LISTS[4]!).catch((error: unknown) => error);
    await full.dispose();
    expect(await running).toHaveLength(4);
    expect(await waiting).toBeInstanceOf(EngineUnavailableError);
    expect(full.stats().runs).toBe(1);
  });

  it('rejects what is queued and what comes after dispose', async () => {
    const short = await OnnxEngine.create(MODEL, { batchWindowMs: 50 });
    const queued = short.score(LISTS[0]!).catch((error: unknown) => error);
    await short.dispose();
    expect(await queued).toBeInstanceOf(EngineUnavailableError);
    await expect(short.score(LISTS[0]!)).rejects.toThrow(/disposed/);
  });
});

describe('devices', () => {
  const small = compileModel(SYNTHETIC_KB);

  // onnxruntime-node here has no CUDA provider libraries: the CUDA path is configuration, a clear
  // failure when CUDA is required, and a reported fallback when it is only preferred.
  it('refuses batching options that could never run', async () => {
    await expect(OnnxEngine.create(small, { maxBatch: 0 })).rejects.toThrow(/maxBatch/);
    await expect(OnnxEngine.create(small, { batchWindowMs: -1 })).rejects.toThrow(/batchWindowMs/);
  });

  it('loads its tables as external data beside the graph above the size limit, with the same results', async () => {
    const before = new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('reasoning-graph-')));
    const inline = await OnnxEngine.create(MODEL, { threads: 1 });
    const external = await OnnxEngine.create(MODEL, { threads: 1, externalTablesAboveBytes: 0 });
    try {
      const evidence = LISTS.map((l) => encodeFindings(MODEL, l));
      const [a, b] = [await inline.runEvidence(evidence), await external.runEvidence(evidence)];
      expect(Buffer.from(b.posterior.buffer)).toEqual(Buffer.from(a.posterior.buffer));
      expect(Buffer.from(b.llr.buffer)).toEqual(Buffer.from(a.llr.buffer));
      expect(Buffer.from(b.gain.buffer)).toEqual(Buffer.from(a.gain.buffer));
    } finally {
      await inline.dispose();
      await external.dispose();
    }
    // The temporary model and table files are gone once the session is open.
    const after = readdirSync(tmpdir()).filter((n) => n.startsWith('reasoning-graph-') && !before.has(n));
    expect(after).toEqual([]);
    // Each table's TensorProto names the file, its page-aligned offset and length, and no raw data.
    const files = buildScoringGraphFiles(MODEL, 'tables.bin');
    const cells = MODEL.features.length * MODEL.hypotheses;
    expect(files.tables.map((t) => [t.length, t.bytes().length])).toEqual(
      Array.from({ length: 4 }, () => [cells * 4, cells * 4]),
    );
    expect(files.tables.every((t) => t.offset % EXTERNAL_TABLE_ALIGNMENT === 0)).toBe(true);
    expect(files.model.length).toBeLessThan(buildScoringGraph(MODEL).length - 4 * cells * 4 + 1000);
    // The external path writes files and the inline one does not: with nowhere to write, only the
    // external one fails, saying what it could not do.
    const nowhere = '/nonexistent/reasoning-engine-test';
    await expect(OnnxEngine.create(MODEL, { externalTablesAboveBytes: 0, tempDir: nowhere })).rejects.toThrow(
      /^the scoring graph could not be written or loaded: .*ENOENT.*mkdtemp/,
    );
    await (await OnnxEngine.create(MODEL, { tempDir: nowhere })).dispose();
    await expect(OnnxEngine.create(MODEL, { externalTablesAboveBytes: -1 })).rejects.toThrow(
      'externalTablesAboveBytes must be a number >= 0',
    );
  });

  it('fails clearly when CUDA is required and unusable', async () => {
    await expect(OnnxEngine.create(small, { device: 'cuda' })).rejects.toThrow(
      /CUDA execution provider is not usable .*configure the cpu device/,
    );
  });

  it('falls back to the CPU under auto, saying why', async () => {
    const tried = await OnnxEngine.create(small, { device: 'auto', gpuAvailable: true });
    const noGpu = await loadEngine(small, { device: 'auto', gpuAvailable: false });
    try {
      expect(tried.info).toMatchObject({ kind: 'onnxruntime', device: 'cpu', requestedDevice: 'auto' });
      expect(tried.info.fallbackReason).toMatch(/^CUDA execution provider not usable, running on CPU/);
      expect(noGpu.info).toMatchObject({
        kind: 'onnxruntime',
        device: 'cpu',
        requestedDevice: 'auto',
        fallbackReason: 'no GPU visible, running on CPU',
      });
      const findings = [{ feature: 'syn-spot', present: true, certainty: 1 }];
      expect((await tried.score(findings)).ranked[0]!.condition).toBe('syn-alpha');
    } finally {
      await tried.dispose();
      await noGpu.dispose();
    }
  });
});
