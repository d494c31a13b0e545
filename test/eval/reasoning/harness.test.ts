// The reasoning evaluation harness (issue 9): the shipped case file is valid and cites its sources,
// the loader names the file, case and field of every problem, the figures on a hand-made set of
// responses are the hand-computed ones (and agree with the engine's own metrics), and, when the
// service is built, the harness runs end to end against it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { describeReal } from '../../fixtures/real-component.js';
import { brierScore as engineBrier } from '../../../services/reasoning/src/engine/metrics.js';
import type { EngineResult } from '../../../services/reasoning/src/domain/types.js';
import {
  acceptedIds,
  benchmarkFigures,
  CaseFileError,
  conditionIdsFromCsv,
  expectedCalibrationError,
  failedOutcome,
  formatBenchmark,
  formatCaseTable,
  formatSummary,
  loadCaseFile,
  parseCaseFile,
  scoreResponse,
  summarize,
  type CaseOutcome,
  type EvalCase,
} from './lib.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const CASES = join(root, 'test/eval/reasoning/cases/primary-care.json');
const CONDITIONS = join(root, 'services/reasoning/kb/primary-care/conditions.csv');
const SERVICE_MAIN = join(root, 'services/reasoning/dist/main.js');

/** id -> icd10 of the primary-care base (both are the first two, unquoted, columns). */
async function baseConditions(): Promise<Map<string, string>> {
  const text = await readFile(CONDITIONS, 'utf8');
  const ids = conditionIdsFromCsv(text);
  const icd = new Map<string, string>();
  for (const line of text.split(/\r?\n/).slice(1)) {
    const [id, code] = line.split(',');
    if (id !== undefined && code !== undefined && ids.has(id)) icd.set(id, code);
  }
  return icd;
}

describe('the shipped case file', () => {
  it('validates, and every case cites a source and targets a condition of the primary-care base', async () => {
    const file = await loadCaseFile(CASES);
    const conditions = await baseConditions();
    expect(file.cases.length).toBeGreaterThanOrEqual(30);
    expect(new Set(file.cases.map((c) => c.id)).size).toBe(file.cases.length);
    for (const c of file.cases) {
      expect(c.source.url).toMatch(/^https?:\/\//);
      expect(c.source.citation.length).toBeGreaterThan(10);
      expect(c.source.locator.length).toBeGreaterThan(0);
      // The expected condition exists in conditions.csv, with the base's own ICD-10 code.
      expect([c.id, conditions.get(c.expected.condition_id)]).toEqual([c.id, c.expected.icd10]);
      // A case's id says its language.
      expect(c.id.startsWith(`${c.language}-`)).toBe(true);
    }
  });

  it('holds both languages, at least a third Vietnamese, and every translation names its original', async () => {
    const { cases } = await loadCaseFile(CASES);
    const vi = cases.filter((c) => c.language === 'vi');
    expect(cases.some((c) => c.language === 'en')).toBe(true);
    expect(vi.length * 3).toBeGreaterThanOrEqual(cases.length);
    const ids = new Set(cases.map((c) => c.id));
    for (const c of vi) {
      const from = /translated from case (\S+) by ClinicalSuite/.exec(c.notes ?? '')?.[1];
      if (from === undefined) continue; // written in Vietnamese from a Vietnamese source
      expect(ids.has(from)).toBe(true);
      expect(cases.find((o) => o.id === from)?.expected).toEqual(c.expected);
    }
    // Spread over the conditions, not one disease.
    expect(new Set(cases.map((c) => c.expected.condition_id)).size).toBeGreaterThanOrEqual(20);
  });
});

const good = {
  id: 'en-x-01',
  language: 'en',
  text: 'Fever and headache for 3 days.',
  expected: { condition_id: 'dengue', icd10: 'A90' },
  source: { citation: 'A citation', url: 'https://example.org/case', locator: 'Case 1' },
};
const fileWith = (cases: unknown[]) => ({ format: 'clinicalsuite.reasoning-cases/v1', cases });

function problemsOf(json: unknown): string[] {
  try {
    parseCaseFile(json, 'bad.json');
  } catch (error) {
    expect(error).toBeInstanceOf(CaseFileError);
    return [...(error as CaseFileError).problems];
  }
  throw new Error('the file was accepted');
}

describe('the benchmark case file (Semigran et al. 2015 vignettes)', () => {
  const SEMIGRAN = join(root, 'test/eval/reasoning/cases/semigran-2015.json');

  it('holds the 45 vignettes in English and in Vietnamese, each translation with its original answer', async () => {
    const file = await loadCaseFile(SEMIGRAN);
    const en = file.cases.filter((c) => c.language === 'en');
    const vi = file.cases.filter((c) => c.language === 'vi');
    expect([en.length, vi.length]).toEqual([45, 45]);
    for (const urgency of ['em', 'ne', 'sc'])
      expect(en.filter((c) => c.id.startsWith(`semigran-${urgency}-`)).length).toBe(15);
    for (const c of vi) {
      const original = file.cases.find((o) => o.id === c.id.replace(/-vi$/, '-en'));
      expect(original?.expected).toEqual(c.expected);
      expect(c.source.url).toBe('https://doi.org/10.1136/bmj.h3480');
    }
    expect(file.anchors?.map((a) => [a.top1, a.top3])).toEqual([
      [0.34, 0.51],
      [0.72, 0.84],
    ]);
  });

  it('names, for every vignette, conditions of the shipped base with its ICD-10 codes', async () => {
    const file = await loadCaseFile(SEMIGRAN);
    const conditions = await baseConditions();
    for (const c of file.cases) {
      expect([c.id, conditions.get(c.expected.condition_id)]).toEqual([c.id, c.expected.icd10]);
      for (const id of c.expected.also_accepted ?? [])
        expect([c.id, conditions.has(id)]).toEqual([c.id, true]);
    }
  });
});

describe('the case loader', () => {
  it('accepts a minimal valid file', () => {
    expect(parseCaseFile(fileWith([good]), 'ok.json').cases).toHaveLength(1);
  });

  it('names the file, the case and the field of every problem', () => {
    const problems = problemsOf(
      fileWith([
        good,
        { ...good, id: 'en-x-02', source: { citation: 'c', locator: 'l' } },
        { ...good, id: 'en-x-03', language: 'fr', expected: { condition_id: 'dengue', icd10: 'dengue' } },
        { ...good, id: 'en-x-04', text: '   ' },
        { ...good },
      ]),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^bad\.json: case "en-x-02" \(cases\[1\]\) field source\.url: /),
      expect.stringMatching(/^bad\.json: case "en-x-03" \(cases\[2\]\) field language: /),
      expect.stringMatching(
        /^bad\.json: case "en-x-03" \(cases\[2\]\) field expected\.icd10: must be an ICD-10 code/,
      ),
      expect.stringMatching(/^bad\.json: case "en-x-04" \(cases\[3\]\) field text: must not be empty/),
      'bad.json: case "en-x-01" (cases[4]) field id: duplicate id, first used by cases[0]',
    ]);
  });

  it('rejects a source URL that is not http(s), unknown fields and a case without an id', () => {
    const problems = problemsOf(
      fileWith([
        { ...good, source: { ...good.source, url: 'ftp://example.org/x' } },
        { ...good, id: 'en-x-02', extra: 1 },
        { language: 'en' },
      ]),
    );
    expect(problems[0]).toMatch(/case "en-x-01" \(cases\[0\]\) field source\.url: must be an http\(s\) URL/);
    expect(problems[1]).toMatch(/case "en-x-02" \(cases\[1\]\) field \(root\): .*extra/);
    expect(problems.some((p) => p.startsWith('bad.json: case (no id) (cases[2]) field id:'))).toBe(true);
  });

  it('rejects a file of the wrong format or with no cases', () => {
    expect(problemsOf({ cases: [good] })[0]).toMatch(
      /^bad\.json: field format: must be "clinicalsuite\.reasoning-cases\/v1"/,
    );
    expect(problemsOf(fileWith([]))[0]).toMatch(/^bad\.json: field cases: must hold at least one case/);
    expect(problemsOf([good])[0]).toMatch(/^bad\.json: field \(root\): /);
  });

  it('says when a file cannot be read or is not JSON', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'eval-cases-'));
    try {
      const path = join(dir, 'broken.json');
      await writeFile(path, '{ "format": ');
      await expect(loadCaseFile(path)).rejects.toThrow(`${path} is not JSON`);
      await expect(loadCaseFile(join(dir, 'missing.json'))).rejects.toThrow('cannot read case file');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

const evalCase = (id: string, expected: string, language: 'en' | 'vi' = 'en'): EvalCase => ({
  id,
  language,
  text: 't',
  expected: { condition_id: expected, icd10: 'A90' },
  source: { citation: 'c', url: 'https://example.org', locator: 'l' },
});
const response = (diagnoses: [string, number][], unknown: number) => ({
  diagnoses: diagnoses.map(([condition_id, probability], i) => ({ rank: i + 1, condition_id, probability })),
  unknown_probability: unknown,
  findings: [{ feature: 'fever' }],
  model: {
    engine: 'reference',
    device: 'cpu',
    knowledge_bases: [{ id: 'primary-care', version: '1' }],
    calibration: null,
  },
});

describe('scoring and aggregation', () => {
  // A: expected a, ranked 1st.  B: expected b, ranked 2nd.  C (vi): expected c, absent from a list
  // cut at top_k = 2 (0.05 left over).  D: expected z, absent from a short list (not scorable).
  const outcomes: CaseOutcome[] = [
    scoreResponse(
      evalCase('A', 'a'),
      response(
        [
          ['a', 0.6],
          ['b', 0.3],
        ],
        0.1,
      ),
      2,
    ),
    scoreResponse(
      evalCase('B', 'b'),
      response(
        [
          ['a', 0.5],
          ['b', 0.2],
        ],
        0.3,
      ),
      2,
    ),
    scoreResponse(
      evalCase('C', 'c', 'vi'),
      response(
        [
          ['a', 0.7],
          ['b', 0.2],
        ],
        0.05,
      ),
      2,
    ),
    scoreResponse(evalCase('D', 'z'), response([['a', 0.9]], 0.1), 50),
    failedOutcome(evalCase('E', 'a'), 'HTTP 503: no scorable condition'),
  ];

  it('classifies each case', () => {
    expect(outcomes.map((o) => [o.id, o.status, o.rank])).toEqual([
      ['A', 'ranked', 1],
      ['B', 'ranked', 2],
      ['C', 'outside_top_k', null],
      ['D', 'not_scorable', null],
      ['E', 'error', null],
    ]);
  });

  it('gives the hand-computed figures', () => {
    const s = summarize(outcomes);
    // Brier: A (0.6-1)^2+0.3^2+0.1^2 = 0.26; B 0.5^2+(0.2-1)^2+0.3^2 = 0.98;
    // C 0.7^2+0.2^2+0.05^2+(0.05-1)^2 = 1.435 (the truth is the lumped rest). Mean 2.675/3.
    expect(s.overall.cases).toBe(3);
    expect(s.overall.brier).toBeCloseTo(2.675 / 3, 12);
    expect(s.overall.top1).toBeCloseTo(1 / 3, 12);
    expect(s.overall.top3).toBeCloseTo(2 / 3, 12);
    expect(s.overall.top10).toBeCloseTo(2 / 3, 12);
    // ECE: one case per bin: |1-0.6|, |0-0.5|, |0-0.7|, each weighted 1/3.
    expect(s.overall.ece).toBeCloseTo(1.6 / 3, 12);
    expect(s.overall.meanUnknown).toBeCloseTo(0.15, 12);
    expect(s.byLanguage['en']).toMatchObject({ cases: 2, top1: 0.5, top3: 1 });
    expect(s.byLanguage['en']?.brier).toBeCloseTo(0.62, 12);
    expect(s.byLanguage['vi']?.brier).toBeCloseTo(1.435, 12);
    // Not-scorable and failed cases are counted and named, never dropped silently.
    expect(s.total).toBe(5);
    expect(s.notScorable).toEqual([{ id: 'D', expected: 'z' }]);
    expect(s.outsideTopK).toEqual(['C']);
    expect(s.failed).toEqual([{ id: 'E', error: 'HTTP 503: no scorable condition' }]);
    expect(s.models).toHaveLength(1);
    const text = formatSummary(s);
    expect(text).toContain('cases: 5 (scored 3, not scorable in the loaded base 1, failed 1)');
    expect(text).toContain('top-1 33.3%');
    expect(text).toContain('knowledge bases primary-care@1');
    expect(formatCaseTable(outcomes)).toMatch(/\nA +en +a +1 +a 0\.600, b 0\.300 +0\.100/);
  });

  it('agrees with the engine metrics on the same distributions', () => {
    const asEngine = (o: CaseOutcome): { result: EngineResult; truth: string } => ({
      result: {
        ranked: o.diagnoses.map((d) => ({
          condition: d.condition_id,
          probability: d.probability,
          contributions: [],
        })),
        unknown: o.unknown,
        nextFindings: [],
      },
      truth: o.expected,
    });
    const scored = outcomes.slice(0, 3);
    expect(summarize(scored).overall.brier).toBeCloseTo(engineBrier(scored.map(asEngine)), 12);
  });

  it('puts the top-1 probability in the right bin at the edges', () => {
    const one = (p: number, right: boolean) =>
      scoreResponse(
        evalCase('x', right ? 'a' : 'b'),
        response(
          [
            ['a', p],
            ['b', 1 - p - 0.01],
          ],
          0.01,
        ),
        50,
      );
    expect(expectedCalibrationError([one(1, true)])).toBeCloseTo(0, 12);
    expect(expectedCalibrationError([one(0.5, false), one(0.5, true)])).toBeCloseTo(0, 12);
  });

  it('counts a condition the source also accepts as the right answer', () => {
    const c: EvalCase = {
      ...evalCase('F', 'x'),
      expected: { condition_id: 'x', icd10: 'A00', also_accepted: ['b'] },
    };
    expect(acceptedIds(c)).toEqual(new Set(['x', 'b']));
    const o = scoreResponse(
      c,
      response(
        [
          ['a', 0.5],
          ['b', 0.4],
        ],
        0.1,
      ),
      2,
    );
    expect([o.status, o.rank, o.expected]).toEqual(['ranked', 2, 'x']);
  });

  it('gives the benchmark figures over every case and over the covered ones, per language', () => {
    const cases = [evalCase('A', 'a'), evalCase('B', 'b'), evalCase('C', 'c', 'vi'), evalCase('D', 'z')];
    const f = benchmarkFigures(cases, outcomes.slice(0, 4), new Set(['a', 'b', 'c']));
    expect(f).toEqual({
      en: { all: { n: 3, top1: 1, top3: 2 }, covered: { n: 2, top1: 1, top3: 2 } },
      vi: { all: { n: 1, top1: 0, top3: 0 }, covered: { n: 1, top1: 0, top3: 0 } },
    });
    const table = formatBenchmark(f, [{ who: 'physicians', top1: 0.72, top3: 0.84, citation: 'a paper' }]);
    expect(table).toMatch(/engine, en, all cases +33% \(1\/3\) +67% \(2\/3\)/);
    expect(table).toMatch(/physicians +72% +84%/);
  });

  it('rejects a response without diagnoses', () => {
    expect(() => scoreResponse(evalCase('A', 'a'), { error: {} }, 10)).toThrow(
      'case A: the response has no diagnoses array',
    );
  });
});

/** This process's environment without the upstreams: the rule pass alone, no code lookup. */
function withoutUpstreams(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env['LLM_URL'];
  delete env['CODE_SEARCH_URL'];
  return env;
}

const notBuilt = existsSync(SERVICE_MAIN) ? null : `${SERVICE_MAIN} is not built (npm run build)`;

describeReal(notBuilt, 'the harness end to end against the built service', () => {
  it('runs a few cases and prints the table and the summary', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'eval-e2e-'));
    try {
      const { cases } = await loadCaseFile(CASES);
      const few = [
        cases.find((c) => c.id === 'en-dengue-01'),
        cases.find((c) => c.id === 'vi-dengue-01'),
        cases.find((c) => c.id === 'en-copd-01'),
      ];
      const path = join(dir, 'few.json');
      await writeFile(path, JSON.stringify(fileWith(few)));
      const out = join(dir, 'out.json');
      const { code, stdout, stderr } = await new Promise<{
        code: number | null;
        stdout: string;
        stderr: string;
      }>((done) => {
        const child = spawn(
          process.execPath,
          [join(root, 'test/eval/reasoning/run.js'), path, '--rules-only', '--json', out],
          {
            cwd: root,
            env: withoutUpstreams(),
          },
        );
        let o = '';
        let e = '';
        child.stdout.on('data', (d: Buffer) => (o += d.toString()));
        child.stderr.on('data', (d: Buffer) => (e += d.toString()));
        child.on('close', (c) => done({ code: c, stdout: o, stderr: e }));
      });
      // 0: every case answered; 1: some request failed (e.g. 503 while the base has no scorable condition).
      expect([0, 1]).toContain(code);
      expect(stderr).not.toMatch(/TypeError|SyntaxError/);
      expect(stdout).toContain('cases: 3 (');
      expect(stdout).toMatch(/en-dengue-01 +en +dengue/);
      const report = JSON.parse(await readFile(out, 'utf8')) as {
        outcomes: CaseOutcome[];
        summary: { total: number };
      };
      expect(report.summary.total).toBe(3);
      if (code === 0) {
        expect(stdout).toMatch(/^all +n=/m);
        for (const o of report.outcomes) expect(o.status).not.toBe('error');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
