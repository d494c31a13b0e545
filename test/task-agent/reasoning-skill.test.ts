/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { askReasoningSkill, formatDiagnosis } from '../../services/task-agent/src/adapters/skills.js';
import { freePort } from '../kit/helpers.js';
import { startReasoning, type ReasoningTestServer } from '../reasoning/service-helpers.js';

// The task agent's `ask_reasoning_engine` skill against the real reasoning service on the shipped
// primary-care base (rule extractor only: no LLM configured): the planning LLM reads a few lines,
// not the engine's whole JSON.

const ctx = { signal: new AbortController().signal, now: () => Date.now() };

describe('the ask_reasoning_engine skill', () => {
  let reasoning: ReasoningTestServer;

  beforeAll(async () => {
    reasoning = await startReasoning();
  }, 60_000);
  afterAll(async () => {
    await reasoning.close();
  });

  it('answers ranked diagnoses with ICD-10 and probability, the rest, and the findings used', async () => {
    const skill = askReasoningSkill(reasoning.url, 10_000);
    const text =
      'High fever for 3 days with severe headache, pain behind the eyes and muscle aches. No cough.';
    const answer = await skill.run(skill.input.parse({ text }), ctx);
    const lines = answer.split('\n');
    expect(lines[0]).toMatch(/^1\. .+ \(ICD-10 [A-Z]\d{2}(\.\w+)?\): 0\.\d{3}(; for: .+)?/);
    expect(answer).toMatch(/^none of these: 0\.\d{3}$/m);
    expect(answer).toMatch(/^findings used: .*Fever \(present\)/m);
    expect(answer).toMatch(/Cough \(absent\)/);
    // Exactly what the service said, in order.
    const res = await fetch(`${reasoning.url}/api/v1/diagnosis`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    const body = (await res.json()) as { diagnoses: { title_en: string; probability: number }[] };
    expect(body.diagnoses.length).toBeGreaterThan(0);
    expect(lines.slice(0, body.diagnoses.length).map((l) => l.replace(/ \(ICD-10.*$/, ''))).toEqual(
      body.diagnoses.map((d, i) => `${i + 1}. ${d.title_en}`),
    );
    expect(formatDiagnosis(body)).toBe(answer);
  });

  it("fails with the service's own reason, and when the service is gone", async () => {
    const skill = askReasoningSkill(reasoning.url, 10_000);
    // Past the skill's own input check, the service refuses text with nothing to score.
    await expect(skill.run({ text: '   ' }, ctx)).rejects.toThrow(/the reasoning engine answered 422/);
    const gone = askReasoningSkill(`http://127.0.0.1:${await freePort()}`, 2_000);
    await expect(gone.run({ text: 'fever' }, ctx)).rejects.toThrow(/did not answer/);
  });

  it('passes on a body of another shape as it came', () => {
    expect(formatDiagnosis({ detail: 'x' })).toBe('{"detail":"x"}');
    expect(formatDiagnosis('plain')).toBe('plain');
  });
});
