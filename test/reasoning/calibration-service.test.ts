/** @jest-environment ./test/face/ort-environment.cjs */
import { describe, expect, it } from '@jest/globals';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  compileModel,
  parseCalibration,
  ReferenceEngine,
  type Calibration,
} from '../../services/reasoning/src/engine/index.js';
import { loadKnowledgeBase } from '../../services/reasoning/src/kb/index.js';
import { diagnosis, serviceTestKb, startReasoning, writeTestKb, type Json } from './service-helpers.js';

// The service's calibration (issue 9): the calibration.json in a base's directory is loaded when it
// was fitted for the loaded base's id and version; REASONING_CALIBRATION overrides it (a file, or
// `none` for α = 1); one fitted for another base or version is refused at start with the reason.
// On the SYNTHETIC service-test base (made-up numbers) written by the tests; the α values are
// arbitrary test values, not fitted ones.

const calibrationFor = (alpha: number, kbId = 'service-test', kbVersion = '1.0.0'): Calibration => ({
  method: 'likelihood-power',
  alpha,
  kbId,
  kbVersion,
});

async function writeJson(path: string, value: unknown): Promise<string> {
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
  return path;
}

async function health(url: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/health`);
  return { status: res.status, body: (await res.json()) as Json };
}

const TEXT = 'Fever and cough for two days, no chest pain.';

/** The engine's own scoring of the response's findings with `calibration`, for comparison. */
async function expected(dir: string, calibration: Calibration | undefined, findings: Json) {
  const loaded = await loadKnowledgeBase(dir);
  if (!loaded.ok) throw new Error('the test base does not load');
  const engine = new ReferenceEngine(compileModel(loaded.knowledgeBase, calibration));
  return engine.score(
    (findings as Json[]).map((f: Json) => ({
      feature: f.feature,
      present: f.present,
      certainty: f.certainty,
    })),
  );
}

describe('the calibration in a base directory', () => {
  it('is loaded when it was fitted for the base: model.calibration names α and the file, scores use α', async () => {
    const dir = await writeTestKb();
    const file = await writeJson(join(dir, 'calibration.json'), calibrationFor(0.5));
    const srv = await startReasoning({ REASONING_KB_DIRS: dir });
    try {
      expect((await health(srv.url)).status).toBe(200);
      const r = await diagnosis(srv.url, { text: TEXT, use_llm: false });
      expect(r.status).toBe(200);
      expect(r.body.model.calibration).toEqual({ alpha: 0.5, source: file });
      const want = await expected(dir, calibrationFor(0.5), r.body.findings);
      const raw = await expected(dir, undefined, r.body.findings);
      expect(r.body.unknown_probability).toBeCloseTo(want.unknown, 5);
      expect(Math.abs(want.unknown - raw.unknown)).toBeGreaterThan(0.01); // α = 0.5 changes the scores
      for (const d of r.body.diagnoses as Json[]) {
        const w = want.ranked.find((x) => x.condition === d.condition_id);
        expect(d.probability).toBeCloseTo(w?.probability ?? Number.NaN, 5);
      }
    } finally {
      await srv.close();
    }
  });

  it('leaves α = 1 (model.calibration null) when no base directory holds one', async () => {
    const srv = await startReasoning({ REASONING_KB_DIRS: await writeTestKb() });
    try {
      const r = await diagnosis(srv.url, { text: TEXT, use_llm: false });
      expect(r.status).toBe(200);
      expect(r.body.model.calibration).toBeNull();
    } finally {
      await srv.close();
    }
  });

  it('is refused when fitted for another version of the base: not ready, naming both versions and the fix', async () => {
    const dir = await writeTestKb();
    const file = await writeJson(join(dir, 'calibration.json'), calibrationFor(0.5, 'service-test', '0.9.0'));
    const srv = await startReasoning({ REASONING_KB_DIRS: dir });
    try {
      const h = await health(srv.url);
      expect(h.status).toBe(503);
      expect(h.body.reason).toContain(`the calibration ${file}`);
      expect(h.body.reason).toContain(
        'fitted for service-test@0.9.0, not for the loaded base service-test@1.0.0',
      );
      expect(h.body.reason).toContain('version 0.9.0, now 1.0.0');
      expect(h.body.reason).toContain('REASONING_CALIBRATION=none');
      const r = await diagnosis(srv.url, { text: TEXT, use_llm: false });
      expect(r.status).toBe(503);
      expect(r.body.detail).toContain('service-test@0.9.0');
    } finally {
      await srv.close();
    }
  });

  it('is refused when fitted for another base, and when it is not a valid calibration', async () => {
    const dir = await writeTestKb();
    await writeJson(join(dir, 'calibration.json'), calibrationFor(0.5, 'primary-care', '1.0.0'));
    let srv = await startReasoning({ REASONING_KB_DIRS: dir });
    try {
      const h = await health(srv.url);
      expect(h.status).toBe(503);
      expect(h.body.reason).toContain(
        'fitted for primary-care@1.0.0, not for the loaded base service-test@1.0.0',
      );
    } finally {
      await srv.close();
    }
    await writeJson(join(dir, 'calibration.json'), { ...calibrationFor(0.5), alpha: -1 });
    srv = await startReasoning({ REASONING_KB_DIRS: dir });
    try {
      const h = await health(srv.url);
      expect(h.status).toBe(503);
      expect(h.body.reason).toContain(`the calibration ${join(dir, 'calibration.json')}`);
      expect(h.body.reason).toContain('cannot be read');
      expect(h.body.reason).toMatch(/alpha/);
    } finally {
      await srv.close();
    }
  });

  it("is refused for a merged base: one base's α does not hold for the merge", async () => {
    const dir = await writeTestKb();
    await writeJson(join(dir, 'calibration.json'), calibrationFor(0.5));
    const doc = serviceTestKb('second-test');
    const second = await writeTestKb({
      ...doc,
      conditions: [{ ...doc.conditions[0]!, id: 'syn2_febrile', prior: 0.05 }],
      // Only features with an HPO term, so they merge with the first base's.
      features: doc.features.filter((f) => ['fever', 'rash', 'hypotension'].includes(f.id)),
      links: doc.links
        .filter((l) => l.condition === 'syn_febrile')
        .map((l) => ({ ...l, condition: 'syn2_febrile' })),
    });
    const srv = await startReasoning({ REASONING_KB_DIRS: `${dir},${second}` });
    try {
      const h = await health(srv.url);
      expect(h.status).toBe(503);
      expect(h.body.reason).toContain(
        'fitted for service-test@1.0.0, not for the loaded base service-test+second-test@',
      );
      expect(h.body.reason).toContain('merged from 2 directories');
    } finally {
      await srv.close();
    }
  });
});

describe('REASONING_CALIBRATION', () => {
  it("overrides the base directory's calibration", async () => {
    const dir = await writeTestKb();
    await writeJson(join(dir, 'calibration.json'), calibrationFor(0.5));
    const override = await writeJson(join(dir, '..', 'override.json'), calibrationFor(2));
    const srv = await startReasoning({ REASONING_KB_DIRS: dir, REASONING_CALIBRATION: override });
    try {
      const r = await diagnosis(srv.url, { text: TEXT, use_llm: false });
      expect(r.status).toBe(200);
      expect(r.body.model.calibration).toEqual({ alpha: 2, source: override });
      const want = await expected(dir, calibrationFor(2), r.body.findings);
      expect(r.body.unknown_probability).toBeCloseTo(want.unknown, 5);
    } finally {
      await srv.close();
    }
  });

  it('=none scores uncalibrated even where the base directory holds a stale calibration', async () => {
    const dir = await writeTestKb();
    await writeJson(join(dir, 'calibration.json'), calibrationFor(0.5, 'service-test', '0.9.0'));
    const srv = await startReasoning({ REASONING_KB_DIRS: dir, REASONING_CALIBRATION: 'none' });
    try {
      expect((await health(srv.url)).status).toBe(200);
      const r = await diagnosis(srv.url, { text: TEXT, use_llm: false });
      expect(r.status).toBe(200);
      expect(r.body.model.calibration).toBeNull();
      const want = await expected(dir, undefined, r.body.findings);
      expect(r.body.unknown_probability).toBeCloseTo(want.unknown, 5);
    } finally {
      await srv.close();
    }
  });

  it('is refused, naming the variable and both versions, when fitted for another base version', async () => {
    const dir = await writeTestKb();
    const override = await writeJson(
      join(dir, '..', 'stale.json'),
      calibrationFor(0.7, 'service-test', '0.9.0'),
    );
    const srv = await startReasoning({ REASONING_KB_DIRS: dir, REASONING_CALIBRATION: override });
    try {
      const h = await health(srv.url);
      expect(h.status).toBe(503);
      expect(h.body.reason).toContain(`the calibration ${override} (REASONING_CALIBRATION)`);
      expect(h.body.reason).toContain(
        'fitted for service-test@0.9.0, not for the loaded base service-test@1.0.0',
      );
    } finally {
      await srv.close();
    }
  });

  it('is refused when the file does not exist', async () => {
    const dir = await writeTestKb();
    const srv = await startReasoning({
      REASONING_KB_DIRS: dir,
      REASONING_CALIBRATION: join(dir, 'nope.json'),
    });
    try {
      const h = await health(srv.url);
      expect(h.status).toBe(503);
      expect(h.body.reason).toContain(
        `the calibration ${join(dir, 'nope.json')} (REASONING_CALIBRATION) cannot be read`,
      );
    } finally {
      await srv.close();
    }
  });
});

describe('the shipped calibration', () => {
  it('is for the shipped primary-care base as it is now (refit α whenever the base changes)', async () => {
    const dir = new URL('../../services/reasoning/kb/primary-care/', import.meta.url);
    const calibration = parseCalibration(
      JSON.parse(await readFile(new URL('calibration.json', dir), 'utf8')),
    );
    const manifest = JSON.parse(await readFile(new URL('kb.json', dir), 'utf8')) as {
      id: string;
      version: string;
    };
    expect(`${calibration.kbId}@${calibration.kbVersion}`).toBe(`${manifest.id}@${manifest.version}`);
    expect(calibration.alpha).toBeGreaterThan(0);
    expect(calibration.fit?.cases).toBeGreaterThan(0);
    expect(calibration.fit?.atBound).toBe(false);
  });

  it('is loaded by default on the shipped base and reported in model.calibration', async () => {
    const srv = await startReasoning();
    try {
      expect((await health(srv.url)).status).toBe(200);
      const r = await diagnosis(srv.url, {
        text: 'High fever, headache and muscle aches. No cough.',
        use_llm: false,
      });
      expect(r.status).toBe(200);
      expect(r.body.model.calibration.source).toMatch(/kb\/primary-care\/calibration\.json$/);
      expect(r.body.model.calibration.alpha).toBeGreaterThan(0);
    } finally {
      await srv.close();
    }
  });
});
