/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ensureCodesearchModels, startCodesearch, type CodesearchTestServer } from '../codesearch/helpers.js';
import { diagnosis, startReasoning, writeTestKb, type ReasoningTestServer } from './service-helpers.js';

// The code lookup against the real code search service (lexical, the real ICD-10-CM tabular list):
// findings get ICD-10-CM codes, diagnoses the title of their code. The base is SYNTHETIC (made-up
// numbers); its conditions carry real ICD-10-CM codes only so their titles can be looked up.

describe('code lookup through the real code search', () => {
  let codes: CodesearchTestServer;
  let srv: ReasoningTestServer;

  beforeAll(async () => {
    await ensureCodesearchModels(['codesearch-icd10cm']);
    codes = await startCodesearch({ CODESEARCH_EMBEDDINGS: 'off', CODESEARCH_TYPES: 'ICD10' });
    srv = await startReasoning({ REASONING_KB_DIRS: await writeTestKb(), CODE_SEARCH_URL: codes.url });
  }, 300_000);
  afterAll(async () => {
    await srv.close();
    await codes.close();
  });

  it('finds ICD-10-CM codes for findings in either language and titles for the diagnoses', async () => {
    const r = await diagnosis(srv.url, {
      text: 'Fever for 3 days, chest pain.',
      findings: [{ feature: 'Ho' }],
      use_llm: false,
    });
    expect(r.status).toBe(200);
    expect(r.body.warnings).toEqual(['LLM skipped (use_llm: false): findings from the rule pass only']);
    const findings = r.body.findings as {
      feature: string;
      codes: { code: string; system: string; title: string }[];
    }[];
    const codesOf = (feature: string) =>
      findings.find((f) => f.feature === feature)?.codes.map((c) => c.code) ?? [];
    expect(codesOf('fever')).toContain('R50.9');
    expect(codesOf('chest_pain')).toContain('R07.9');
    expect(codesOf('cough')).toContain('R05');
    for (const f of findings) for (const c of f.codes) expect(c.system).toBe('ICD-10-CM');
    const febrile = (
      r.body.diagnoses as { condition_id: string; icd10: { title_en: string | null } | null }[]
    ).find((d) => d.condition_id === 'syn_febrile');
    expect(febrile?.icd10?.title_en).toMatch(/Dengue/i);
  });
});
