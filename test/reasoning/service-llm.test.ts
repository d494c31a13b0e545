/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startLlm, TOKEN, type LlmTestServer } from '../llm/helpers.js';
import { diagnosis, startReasoning, writeTestKb, type ReasoningTestServer } from './service-helpers.js';

// The LLM extractor through the real text LLM service with the tiny generated model. Its output is
// random words, so only the contract is asserted: the schema-constrained reply parses (200, not
// 502), every finding's span is where it says in the text, and the LLM is named in the result.

describe('the diagnosis API with the real text LLM (tiny model)', () => {
  let llm: LlmTestServer;
  let srv: ReasoningTestServer;

  beforeAll(async () => {
    llm = await startLlm();
    srv = await startReasoning({
      REASONING_KB_DIRS: await writeTestKb(),
      LLM_URL: llm.url,
      API_TOKEN: TOKEN,
      REASONING_LLM_MAX_FINDINGS: '3',
      REASONING_LLM_MAX_TOKENS: '800',
      REASONING_LLM_RETRIES: '0',
    });
  }, 120_000);
  afterAll(async () => {
    await srv.close();
    await llm.close();
  });

  it('extracts under the JSON schema: the reply parses and every span is valid', async () => {
    const text =
      'Bệnh nhân nam 45 tuổi, sốt 39 độ 3 ngày, không ho. Denies chest pain. Possible rash. SpO2 92%.';
    const r = await diagnosis(srv.url, { text });
    expect(r.status).toBe(200);
    // The model name came from the LLM's /v1/models (REASONING_LLM_MODEL unset).
    expect(typeof r.body.model.extractor.llm).toBe('string');
    expect(r.body.model.extractor.llm).not.toBe('');
    expect(r.body.timings_ms.stages.extract_llm).toBeGreaterThan(0);
    const all = [
      ...(r.body.findings as { span: { start: number; end: number; text: string } | null }[]),
      ...(r.body.unmapped as { span: { start: number; end: number; text: string } }[]),
    ];
    for (const f of all) {
      if (f.span === null) continue;
      expect(text.slice(f.span.start, f.span.end)).toBe(f.span.text);
    }
    // The rule pass's findings are all there whatever the LLM said.
    const features = (r.body.findings as { feature: string; present: boolean; origin: string }[])
      .filter((f) => f.origin === 'rules')
      .map((f) => `${f.feature}:${String(f.present)}`);
    expect(features).toEqual(
      expect.arrayContaining(['fever:true', 'cough:false', 'chest_pain:false', 'rash:true', 'male:true']),
    );
    expect(r.body.warnings).not.toContain('LLM skipped (use_llm: false): findings from the rule pass only');
  }, 120_000);
});
