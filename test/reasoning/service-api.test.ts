/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { metricValue } from '../kit/helpers.js';
import {
  diagnosis,
  fakeUpstream,
  json,
  serviceTestKb,
  startReasoning,
  writeTestKb,
  type FakeUpstream,
  type ReasoningTestServer,
} from './service-helpers.js';

// POST /api/v1/diagnosis end to end (the rule pass, the clinical map, a fake code search, the ONNX
// engine on CPU) on a SYNTHETIC knowledge base written by the tests (made-up numbers).

type Finding = {
  feature: string;
  present: boolean;
  certainty: number;
  origin: string;
  span: { start: number; end: number; text: string } | null;
  value: number | null;
  unit: string | null;
  codes: { code: string; system: string; title: string; score: number }[];
};

function expectSpansValid(text: string, findings: readonly Finding[]): void {
  for (const f of findings) {
    if (f.span === null) continue;
    expect(text.slice(f.span.start, f.span.end)).toBe(f.span.text);
  }
}

const byFeature = (findings: readonly Finding[], feature: string): Finding[] =>
  findings.filter((f) => f.feature === feature);

describe('the diagnosis API on a synthetic base', () => {
  let srv: ReasoningTestServer;
  let codes: FakeUpstream;
  let kbDir: string;

  beforeAll(async () => {
    // A fake code search: one ICD-10-CM code per query, titles for the diagnoses' codes.
    codes = await fakeUpstream((req, body, res) => {
      if (req.method === 'POST' && req.url === '/search') {
        const { query } = JSON.parse(body) as { query: string };
        json(res, 200, {
          results: [{ code: 'R50.9', title: `code for ${query}`, title_en: `code for ${query}`, score: 1.5 }],
        });
      } else if (req.url === '/codes/ICD10/A90') {
        json(res, 200, {
          code: 'A90',
          title: 'Dengue fever [classical dengue]',
          title_en: 'Dengue fever [classical dengue]',
        });
      } else json(res, 404, { detail: 'not found' });
    });
    kbDir = await writeTestKb();
    srv = await startReasoning({
      REASONING_KB_DIRS: kbDir,
      CODE_SEARCH_URL: codes.url,
      MAX_CONCURRENCY: '64',
    });
  });
  afterAll(async () => {
    await srv.close();
    await codes.close();
  });

  it('reads negation and uncertainty in Vietnamese and English, with spans into the text', async () => {
    const text = 'Bệnh nhân không sốt. Denies chest pain. Possible rash on both arms.';
    const r = await diagnosis(srv.url, { text, use_llm: false });
    expect(r.status).toBe(200);
    const findings = r.body.findings as Finding[];
    expectSpansValid(text, findings);
    expect(byFeature(findings, 'fever')).toEqual([
      expect.objectContaining({ present: false, certainty: 1, origin: 'rules' }),
    ]);
    expect(byFeature(findings, 'chest_pain')).toEqual([
      expect.objectContaining({ present: false, origin: 'rules' }),
    ]);
    const rash = byFeature(findings, 'rash');
    expect(rash).toHaveLength(1);
    expect(rash[0]?.present).toBe(true);
    expect(rash[0]?.certainty).toBeLessThan(1);
    expect(rash[0]?.span?.text.toLowerCase()).toBe('rash');
    // Absent fever argues against the febrile condition.
    const febrile = (
      r.body.diagnoses as { condition_id: string; opposing: { feature: string; llr: number }[] }[]
    ).find((d) => d.condition_id === 'syn_febrile');
    expect(febrile?.opposing.map((o) => o.feature)).toContain('fever');
    expect(r.body.warnings).toContain('LLM skipped (use_llm: false): findings from the rule pass only');
  });

  it("keeps a relative's findings out of the patient's", async () => {
    const r = await diagnosis(srv.url, { text: 'Ho 2 ngày. Mẹ bị sốt.', use_llm: false });
    expect(r.status).toBe(200);
    expect(byFeature(r.body.findings as Finding[], 'fever')).toEqual([]);
    expect(byFeature(r.body.findings as Finding[], 'cough')).toHaveLength(1);
    expect(r.body.warnings).toContain(
      "1 finding(s) about relatives (family history) are not scored as the patient's",
    );
  });

  it('reads vitals with units and maps them by the published cut-offs', async () => {
    const text = 'Nhiệt độ 38.5°C, HA 90/60 mmHg, SpO2 92%. Lần khám sau SpO2 88%.';
    const r = await diagnosis(srv.url, { text, use_llm: false });
    expect(r.status).toBe(200);
    const findings = r.body.findings as Finding[];
    expectSpansValid(text, findings);
    expect(byFeature(findings, 'fever')).toEqual([
      expect.objectContaining({ present: true, value: 38.5, unit: '°C', origin: 'rules' }),
    ]);
    // SBP 90 is not below 90 mmHg: hypotension absent, the reading kept.
    expect(byFeature(findings, 'hypotension')).toEqual([
      expect.objectContaining({ present: false, value: 90, unit: 'mmHg' }),
    ]);
    const spo2 = byFeature(findings, 'hypoxemia');
    expect(spo2.map((f) => [f.value, f.unit, f.present])).toEqual([
      [92, '%', false],
      [88, '%', true],
    ]);
    // The diastolic reading maps to no feature of this base: listed as unmapped, not dropped silently.
    expect((r.body.unmapped as { text: string }[]).length).toBeGreaterThanOrEqual(1);
  });

  it('looks up ICD-10-CM codes for findings and diagnoses through the code search', async () => {
    const r = await diagnosis(srv.url, { text: 'Sốt cao 3 ngày', use_llm: false });
    expect(r.status).toBe(200);
    const fever = byFeature(r.body.findings as Finding[], 'fever')[0];
    expect(fever?.codes[0]).toEqual({
      code: 'R50.9',
      system: 'ICD-10-CM',
      title: expect.stringContaining('code for'),
      score: 1.5,
    });
    const top = r.body.diagnoses[0];
    expect(top.condition_id).toBe('syn_febrile');
    expect(top.icd10).toEqual({
      code: 'A90',
      system: 'ICD-10-CM',
      title_en: 'Dengue fever [classical dengue]',
    });
    expect(top.kb).toBe('service-test');
    expect(
      codes.requests.some((q) => q.path === '/search' && JSON.parse(q.body).code_types[0] === 'ICD10'),
    ).toBe(true);
  });

  it('scores structured findings alone, by id or by label/synonym in either language', async () => {
    const r = await diagnosis(srv.url, {
      findings: [
        { feature: 'fever' },
        { feature: 'Ho' },
        { feature: 'chest pain', present: false, certainty: 0.75 },
      ],
      top_k: 2,
      next_findings: 1,
    });
    expect(r.status).toBe(200);
    expect(r.body.findings).toEqual([
      expect.objectContaining({
        feature: 'fever',
        present: true,
        certainty: 1,
        origin: 'structured',
        span: null,
      }),
      expect.objectContaining({ feature: 'cough', present: true, origin: 'structured' }),
      expect.objectContaining({ feature: 'chest_pain', present: false, certainty: 0.75 }),
    ]);
    expect(r.body.diagnoses).toHaveLength(2);
    expect(r.body.diagnoses[0].condition_id).toBe('syn_resp');
    expect(r.body.next_findings).toHaveLength(1);
    const total =
      (r.body.diagnoses as { probability: number }[]).reduce((s, d) => s + d.probability, 0) +
      (r.body.unknown_probability as number);
    expect(total).toBeLessThanOrEqual(1 + 1e-6);
    expect(r.body.model).toEqual({
      engine: 'onnx',
      device: 'cpu',
      device_reason: null,
      knowledge_bases: [{ id: 'service-test', version: '1.0.0' }],
      calibration: null,
      extractor: { llm: null, rules: expect.any(String) },
    });
    const timings = r.body.timings_ms as Record<string, number> & { stages: Record<string, number> };
    for (const key of ['understanding', 'normalisation', 'inference', 'presentation', 'total'])
      expect(timings[key]).toBeGreaterThanOrEqual(0);
    expect(Object.keys(timings.stages).sort()).toEqual(
      ['clinical_map', 'code_lookup', 'engine', 'extract_llm', 'extract_rules', 'result'].sort(),
    );
  });

  it("maps structured names through the extractor's lexicon too (febrile → fever, coughing → cough)", async () => {
    const r = await diagnosis(srv.url, {
      findings: [{ feature: 'febrile' }, { feature: 'coughing', present: false }],
    });
    expect(r.status).toBe(200);
    expect((r.body.findings as Finding[]).map((f) => [f.feature, f.present])).toEqual([
      ['fever', true],
      ['cough', false],
    ]);
  });

  it('merges structured findings with the text, the structured one winning for the same feature', async () => {
    const text = 'Sốt, ho nhiều.';
    const r = await diagnosis(srv.url, {
      text,
      findings: [{ feature: 'Fever', present: false }, { feature: 'rash' }],
      use_llm: false,
    });
    expect(r.status).toBe(200);
    const findings = r.body.findings as Finding[];
    expect(byFeature(findings, 'fever')).toEqual([
      expect.objectContaining({ present: false, origin: 'structured' }),
    ]);
    expect(byFeature(findings, 'cough')).toEqual([
      expect.objectContaining({ present: true, origin: 'rules' }),
    ]);
    expect(byFeature(findings, 'rash')).toEqual([expect.objectContaining({ origin: 'structured' })]);
    expect(r.body.warnings).toEqual(expect.arrayContaining([expect.stringContaining('override')]));
  });

  it('uses demographics only where the base has a feature for them', async () => {
    const r = await diagnosis(srv.url, { findings: [{ feature: 'chest_pain' }], sex: 'male', age: 54 });
    expect(r.status).toBe(200);
    expect(byFeature(r.body.findings as Finding[], 'male')).toHaveLength(1);
    expect(r.body.warnings).toContain('age is not used: the knowledge base has no age feature');
    // A demographic feature is never suggested as a next finding.
    expect((r.body.next_findings as { feature: string }[]).map((n) => n.feature)).not.toContain('male');
  });

  it('is deterministic: the same input gives byte-identical diagnoses, alone or batched with others', async () => {
    const body = {
      text: 'Sốt 39°C, phát ban, không ho. SpO2 95%.',
      findings: [{ feature: 'chest pain', present: false }],
      use_llm: false,
    };
    const first = await diagnosis(srv.url, body);
    const others = Array.from({ length: 12 }, (_, i) =>
      diagnosis(srv.url, { findings: [{ feature: i % 2 === 0 ? 'cough' : 'rash' }] }),
    );
    const again = await Promise.all([diagnosis(srv.url, body), ...others, diagnosis(srv.url, body)]);
    const stable = (b: Record<string, unknown> | undefined): string =>
      JSON.stringify([b?.diagnoses, b?.unknown_probability, b?.next_findings, b?.findings]);
    for (const r of [again[0], again[again.length - 1]]) {
      expect(r?.status).toBe(200);
      expect(stable(r?.body as Record<string, unknown>)).toBe(stable(first.body as Record<string, unknown>));
    }
  });

  it('scores N concurrent requests in fewer engine runs than N, and says so in /gpu/status and /metrics', async () => {
    const before = (await (await fetch(`${srv.url}/api/v1/gpu/status`)).json()) as {
      engine: { batches: number; requests: number };
    };
    const N = 32;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        diagnosis(srv.url, { findings: [{ feature: i % 3 === 0 ? 'fever' : 'cough' }] }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const after = (await (await fetch(`${srv.url}/api/v1/gpu/status`)).json()) as {
      engine: { batches: number; requests: number; mean_batch_size: number };
    };
    const runs = after.engine.batches - before.engine.batches;
    expect(after.engine.requests - before.engine.requests).toBe(N);
    expect(runs).toBeLessThan(N);
    expect(after.engine.mean_batch_size).toBeGreaterThan(1);
    expect(await metricValue(srv.url, 'reasoning_engine_requests_scored')).toBe(after.engine.requests);
    expect(await metricValue(srv.url, 'reasoning_engine_runs')).toBe(after.engine.batches);
    expect(await metricValue(srv.url, 'reasoning_engine_batch_size_count')).toBe(after.engine.batches);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(
      await metricValue(srv.url, 'reasoning_layer_duration_seconds_count', { layer: 'inference' }),
    ).toBeGreaterThanOrEqual(N);
    expect(metrics).toContain('reasoning_top_diagnosis_probability_count');
    expect(
      await metricValue(srv.url, 'reasoning_extractor_failures_total', { reason: 'invalid_reply' }),
    ).toBe(0);
  });

  it('answers 400 for malformed JSON and 415 for a body that is not JSON', async () => {
    const bad = await diagnosis(srv.url, '{"text": "sốt"');
    expect(bad.status).toBe(400);
    const plain = await fetch(`${srv.url}/api/v1/diagnosis`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'sốt',
    });
    expect(plain.status).toBe(415);
    expect(((await plain.json()) as { detail: string }).detail).toMatch(/JSON/);
  });

  it('answers 413 for text over REASONING_MAX_TEXT_CHARS', async () => {
    const r = await diagnosis(srv.url, { text: 'sốt '.repeat(5001), use_llm: false });
    expect(r.status).toBe(413);
    expect(r.body.detail).toMatch(/20000/);
    const atLimit = await diagnosis(srv.url, { text: 'x'.repeat(20_000), use_llm: false });
    expect(atLimit.status).toBe(200);
  });

  it('answers 20,000 characters with no sentence break in seconds, and /health meanwhile', async () => {
    // The rule pass is synchronous: this text used to hold the process for 221 s (health too).
    const text = 'không sốt, '.repeat(1819).slice(0, 20_000);
    const started = performance.now();
    const pending = diagnosis(srv.url, { text, use_llm: false });
    const health = await fetch(`${srv.url}/health`);
    const r = await pending;
    const elapsed = performance.now() - started;
    expect(health.status).toBe(200);
    expect(r.status).toBe(200);
    expect(elapsed).toBeLessThan(10_000);
    const fevers = byFeature(r.body.findings as Finding[], 'fever');
    expect(fevers.length).toBeGreaterThan(1_000);
    expect(fevers.every((f) => !f.present)).toBe(true);
  });

  it('answers 422 for empty text, no input, bad fields, and unknown features with close matches', async () => {
    for (const body of [{ text: '' }, { text: '   \n\t ' }, {}, { findings: [] }]) {
      const r = await diagnosis(srv.url, body);
      expect(r.status).toBe(422);
      expect(Array.isArray(r.body.detail)).toBe(true);
    }
    expect((await diagnosis(srv.url, { findings: [{ feature: 'fever' }], top_k: 0 })).status).toBe(422);
    expect((await diagnosis(srv.url, { findings: [{ feature: 'fever', certainty: 0 }] })).status).toBe(422);
    expect((await diagnosis(srv.url, { findings: [{ feature: 'fever' }], colour: 'red' })).status).toBe(422);
    const unknown = await diagnosis(srv.url, {
      findings: [{ feature: 'fever' }, { feature: 'feverr' }, { feature: 'zzzz qqqq' }],
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'findings', 1, 'feature'],
        msg: expect.stringMatching(/"feverr".*close matches: fever \(Fever\)/),
      }),
      expect.objectContaining({
        loc: ['body', 'findings', 2, 'feature'],
        msg: expect.stringMatching(/"zzzz qqqq".*no close match/),
      }),
    ]);
  });

  it('documents every field in OpenAPI', async () => {
    const doc = JSON.stringify(await (await fetch(`${srv.url}/openapi.json`)).json());
    for (const needle of [
      '/api/v1/diagnosis',
      '/api/v1/gpu/status',
      '/health',
      'unknown_probability',
      'information_gain_bits',
      'extractor_failed',
      'mean_batch_size',
    ]) {
      expect(doc).toContain(needle);
    }
  });
});

describe('upstream failures', () => {
  let kbDir: string;
  beforeAll(async () => {
    kbDir = await writeTestKb();
  });

  it('turns an unreachable code search into a warning, never a failure', async () => {
    const gone = await fakeUpstream(() => undefined);
    const url = gone.url;
    await gone.close();
    const srv = await startReasoning({
      REASONING_KB_DIRS: kbDir,
      CODE_SEARCH_URL: url,
      REASONING_CODE_SEARCH_TIMEOUT_MS: '500',
    });
    try {
      const r = await diagnosis(srv.url, { text: 'sốt, ho', use_llm: false });
      expect(r.status).toBe(200);
      expect(r.body.warnings).toEqual(
        expect.arrayContaining([expect.stringMatching(/code lookup incomplete.*unreachable/)]),
      );
      expect((r.body.findings as Finding[]).every((f) => f.codes.length === 0)).toBe(true);
      const febrile = (r.body.diagnoses as { condition_id: string; icd10: unknown }[]).find(
        (d) => d.condition_id === 'syn_febrile',
      );
      expect(febrile?.icd10).toEqual({ code: 'A90', system: 'ICD-10-CM', title_en: null });
    } finally {
      await srv.close();
    }
  });

  it('reasons from the rule pass when the LLM is down, and says so; use_llm: true makes it a 502 with the partial findings, which then succeed as structured input', async () => {
    const gone = await fakeUpstream(() => undefined);
    const url = gone.url;
    await gone.close();
    const srv = await startReasoning({
      REASONING_KB_DIRS: kbDir,
      LLM_URL: url,
      REASONING_LLM_MODEL: 'any',
      REASONING_LLM_RETRIES: '0',
    });
    try {
      const text = 'Sốt 38.8°C, không ho, possible rash.';
      const fallback = await diagnosis(srv.url, { text });
      expect(fallback.status).toBe(200);
      expect(fallback.body.warnings).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            /^LLM extractor failed \(unreachable: .*\): findings from the rule pass only/,
          ),
        ]),
      );
      expect(fallback.body.model.extractor.llm).toBeNull();
      expect((fallback.body.findings as Finding[]).every((f) => f.origin === 'rules')).toBe(true);
      expect(fallback.body.diagnoses[0].condition_id).toBe('syn_febrile');

      const r = await diagnosis(srv.url, { text, use_llm: true });
      expect(r.status).toBe(502);
      expect(r.body.error).toEqual({
        code: 'extractor_failed',
        message: expect.stringMatching(/unreachable/),
        request_id: expect.any(String),
      });
      expect(r.body.hint).toMatch(/structured/);
      const partial = r.body.partial.findings as Finding[];
      expectSpansValid(text, partial);
      expect(partial.map((f) => [f.feature, f.present])).toEqual(
        expect.arrayContaining([
          ['fever', true],
          ['cough', false],
          ['rash', true],
        ]),
      );
      const again = await diagnosis(srv.url, {
        findings: partial.map((f) => ({ feature: f.feature, present: f.present, certainty: f.certainty })),
        use_llm: false,
      });
      expect(again.status).toBe(200);
      expect(again.body.diagnoses[0].condition_id).toBe('syn_febrile');
      expect(
        await metricValue(srv.url, 'reasoning_extractor_failures_total', { reason: 'unreachable' }),
      ).toBe(2);
      // The rule pass alone still works when asked for.
      expect((await diagnosis(srv.url, { text, use_llm: false })).status).toBe(200);
    } finally {
      await srv.close();
    }
  });

  it('answers from the rule pass, with a warning, when the LLM does not answer within its deadline', async () => {
    // Accepts the request and never answers: an LLM still loading its model, or overloaded.
    const hung = await fakeUpstream(() => undefined);
    const srv = await startReasoning({
      REASONING_KB_DIRS: kbDir,
      LLM_URL: hung.url,
      REASONING_LLM_MODEL: 'any',
      REASONING_LLM_RETRIES: '0',
      REASONING_LLM_TIMEOUT_MS: '500',
    });
    try {
      const started = Date.now();
      const r = await diagnosis(srv.url, { text: 'Sốt 38.8°C, không ho, possible rash.' });
      expect(r.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(r.body.warnings).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^LLM extractor failed \(timeout: .*\): findings from the rule pass only/),
        ]),
      );
      expect(r.body.diagnoses[0].condition_id).toBe('syn_febrile');
      expect(await metricValue(srv.url, 'reasoning_extractor_failures_total', { reason: 'timeout' })).toBe(1);
    } finally {
      await srv.close();
      await hung.close();
    }
  });

  it('answers from the rule pass (or 502 under use_llm: true) when the LLM returns something that is not the findings JSON', async () => {
    const llm = await fakeUpstream((_req, _body, res) =>
      json(res, 200, {
        id: 'x',
        object: 'chat.completion',
        model: 'garbage-model',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Sure! The patient has fever.' },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
      }),
    );
    const srv = await startReasoning({
      REASONING_KB_DIRS: kbDir,
      LLM_URL: llm.url,
      REASONING_LLM_MODEL: 'garbage-model',
    });
    try {
      const fallback = await diagnosis(srv.url, { text: 'Sốt, đau ngực.' });
      expect(fallback.status).toBe(200);
      expect(fallback.body.warnings).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^LLM extractor failed \(invalid_reply: .*other than JSON/),
        ]),
      );
      const r = await diagnosis(srv.url, { text: 'Sốt, đau ngực.', use_llm: true });
      expect(r.status).toBe(502);
      expect(r.body.error.message).toMatch(/other than JSON/);
      expect((r.body.partial.findings as Finding[]).map((f) => f.feature).sort()).toEqual([
        'chest_pain',
        'fever',
      ]);
      expect(
        await metricValue(srv.url, 'reasoning_extractor_failures_total', { reason: 'invalid_reply' }),
      ).toBe(2);
      expect(JSON.parse(llm.requests[0]?.body ?? '{}').response_format.type).toBe('json_schema');
    } finally {
      await srv.close();
      await llm.close();
    }
  });
});

describe('not ready', () => {
  it('says clearly when no base has a scorable condition (numbers not curated yet): /health 503, diagnosis 503', async () => {
    // The shipped primary-care base started with definitions only; a base in that state, written here.
    const doc = serviceTestKb('primary-care');
    const dir = await writeTestKb({
      ...doc,
      conditions: doc.conditions.map((c) => ({ ...c, prior: null, prior_source: null })),
    });
    const srv = await startReasoning({ REASONING_KB_DIRS: dir });
    try {
      const health = await fetch(`${srv.url}/health`);
      expect(health.status).toBe(503);
      const body = (await health.json()) as {
        status: string;
        reason: string;
        knowledge_bases: { id: string; scorable: number }[];
      };
      expect(body.status).toBe('unhealthy');
      expect(body.reason).toMatch(/no knowledge base has a scorable condition/);
      expect(body.reason).toMatch(/primary-care/);
      expect(body.knowledge_bases).toEqual([expect.objectContaining({ id: 'primary-care', scorable: 0 })]);
      const r = await diagnosis(srv.url, { findings: [{ feature: 'fever' }] });
      expect(r.status).toBe(503);
      expect(r.body.detail).toMatch(/scorable/);
      // A malformed request is refused as such while not ready too.
      expect((await diagnosis(srv.url, { text: 'x'.repeat(20_001) })).status).toBe(413);
      const gpu = (await (await fetch(`${srv.url}/api/v1/gpu/status`)).json()) as {
        engine: unknown;
        engine_reason: string;
      };
      expect(gpu.engine).toBeNull();
      expect(gpu.engine_reason).toMatch(/scorable/);
    } finally {
      await srv.close();
    }
  });

  it('is not ready, naming the problem, when a base directory is not a valid base', async () => {
    const srv = await startReasoning({ REASONING_KB_DIRS: '/nonexistent/kb-dir' });
    try {
      const health = await fetch(`${srv.url}/health`);
      expect(health.status).toBe(503);
      expect(((await health.json()) as { reason: string }).reason).toMatch(/not valid.*kb\.json/);
    } finally {
      await srv.close();
    }
  });
});
