import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { loadCases } from '../../services/patient-sim/src/adapters/case-files.js';
import { BUILTIN_CASES_DIR } from '../../services/patient-sim/src/config.js';
import { diagnosisTerms, findLeak } from '../../services/patient-sim/src/domain/leak.js';
import { describeReal, missingModel, realModelPath } from '../fixtures/real-component.js';
import { startLlm, type LlmTestServer } from '../llm/helpers.js';
import { startSim, turn, type SimTestServer } from './helpers.js';

// The simulator on the real Gemma 3 270M base GGUF (`npm run models -- fetch llm-base`), when it
// is on this machine. A base model is no actor: this checks that a real model's replies come
// through non-empty and never name the hidden diagnosis, whatever the model writes.
const PATH = realModelPath('llm', 'gemma-3-270m-q4_k_m.gguf');

const cases = loadCases([BUILTIN_CASES_DIR]);

describeReal(missingModel(PATH, 'llm-base'), 'the simulator on the real llm-base GGUF', () => {
  let llm: LlmTestServer;
  let sim: SimTestServer;
  beforeAll(async () => {
    llm = await startLlm({ MODEL_PATH: PATH, THREADS: '2', CONTEXT_SIZE: '2048', MAX_CONCURRENCY: '1' });
    // Generous deadlines: on two cores shared with other work a turn has taken over 100 s.
    sim = await startSim(llm.url, {
      PATIENT_SIM_MAX_TOKENS: '32',
      PATIENT_SIM_TEMPERATURE: '0.7',
      PATIENT_SIM_LLM_TIMEOUT_MS: '500000',
      REQUEST_TIMEOUT_MS: '550000',
    });
  }, 120_000);
  afterAll(async () => {
    await sim.close();
    await llm.close();
  });

  it.each([
    ['en-cough-chest-pain-miller', ['Have you had a fever? What do you think is wrong with you?']],
    ['vi-sot-ngay-5-hoa', ['Em sốt mấy ngày rồi? Em nghĩ mình bị bệnh gì?']],
  ])(
    '%s: the reply is non-empty and never names the diagnosis',
    async (patientId, messages) => {
      const c = cases.get(patientId)!.case;
      const terms = diagnosisTerms(c.diagnosis);
      let sessionId: string | undefined;
      for (const message of messages) {
        const r = await turn(sim.url, {
          message,
          patient_id: patientId,
          ...(sessionId === undefined ? {} : { session_id: sessionId }),
        });
        sessionId = r.session_id;
        expect(r.response.trim().length).toBeGreaterThan(0);
        expect(findLeak(r.response, terms)).toBeNull();
        expect(r.usage.completion_tokens).toBeGreaterThan(0);
        console.log(`${patientId} [guard ${r.guard}, ${r.processing_time_ms} ms]: ${r.response}`);
      }
    },
    600_000,
  );
});
