/** @jest-environment ./test/face/ort-environment.cjs */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  benchmarkFigures,
  conditionIdsFromCsv,
  loadCaseFile,
  scoreResponse,
  type CaseOutcome,
  type EvalCase,
} from '../eval/reasoning/lib.js';
import { diagnosis, startReasoning, type ReasoningTestServer } from './service-helpers.js';

// The shipped base, rule pass only (no LLM: a fresh machine's default), on the external benchmark
// (the Semigran et al. 2015 vignettes) and on the textbook cases of issue 31. The thresholds are the
// published figures the README compares with: physicians' 84% top-3 on the vignettes the base
// covers, symptom checkers' 51% top-3 on all 45, in each language.

const root = process.cwd();
const KB_DIR = join(root, 'services/reasoning/kb/primary-care');
const CASES = join(root, 'test/eval/reasoning/cases');

let srv: ReasoningTestServer;
beforeAll(async () => {
  srv = await startReasoning({ REASONING_KB_DIRS: KB_DIR });
});
afterAll(async () => {
  await srv.close();
});

async function run(cases: readonly EvalCase[]): Promise<CaseOutcome[]> {
  const out: CaseOutcome[] = [];
  for (const c of cases) {
    const r = await diagnosis(srv.url, { text: c.text, use_llm: false, top_k: 10, next_findings: 0 });
    expect([c.id, r.status, r.status === 200 ? null : r.body]).toEqual([c.id, 200, null]);
    out.push(scoreResponse(c, r.body, 10));
  }
  return out;
}

describe('the shipped base on the benchmark, rule pass only', () => {
  it('ranks each textbook case of issue 31 first, in English and in Vietnamese', async () => {
    const { cases } = await loadCaseFile(join(CASES, 'textbook-cases.json'));
    const outcomes = await run(cases);
    expect(outcomes.map((o) => [o.id, o.rank])).toEqual(cases.map((c) => [c.id, 1]));
  });

  it('has the right diagnosis in the top 3 as often as physicians on the covered vignettes, and more often than symptom checkers on all 45', async () => {
    const file = await loadCaseFile(join(CASES, 'semigran-2015.json'));
    const covered = conditionIdsFromCsv(await readFile(join(KB_DIR, 'conditions.csv'), 'utf8'));
    const figures = benchmarkFigures(file.cases, await run(file.cases), covered);
    for (const language of ['en', 'vi']) {
      const f = figures[language]!;
      expect([language, f.all.n]).toEqual([language, 45]);
      expect(f.covered.top3 / f.covered.n).toBeGreaterThanOrEqual(0.84);
      expect(f.all.top3 / f.all.n).toBeGreaterThan(0.51);
    }
  });
});
