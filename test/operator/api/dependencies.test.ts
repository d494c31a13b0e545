import { describe, expect, it } from '@jest/globals';
import {
  COMPONENT_KEYS,
  COMPONENTS,
  dependencyOrder,
  dependentsOf,
  effectiveDependsOn,
  findCycle,
  TOKEN_ENV_NAMES,
  type ServicesLike,
} from '../../../operator/src/api/v1alpha1/index.js';

const on = { enabled: true } as const;

describe('component catalogue', () => {
  it('has the twelve components with their ports and dirs', () => {
    expect(COMPONENT_KEYS.map((k) => `${k}:${COMPONENTS[k].dir}:${COMPONENTS[k].port}`)).toEqual([
      'llm:llm:8001',
      'agent:agent:8002',
      'face:face:8003',
      'medllm:medllm:8004',
      'taskProxy:task-proxy:8005',
      'reasoning:reasoning:8006',
      'taskAgent:task-agent:8007',
      'stt:stt:8011',
      'ocr:ocr:8012',
      'tts:tts:8013',
      'codeSearch:codesearch:8014',
      'patientSim:patient-sim:8015',
    ]);
    expect(COMPONENT_KEYS.filter((k) => COMPONENTS[k].gpu)).toEqual(['llm', 'face', 'medllm', 'reasoning']);
    expect(COMPONENTS.codeSearch.urlEnv).toBe('CODE_SEARCH_URL');
    expect(COMPONENTS.patientSim.urlEnv).toBe('PATIENT_SIM_URL');
    // One token per service that takes bearer tokens: all but the task proxy, which signs users in.
    expect(TOKEN_ENV_NAMES).toEqual([
      'API_TOKEN',
      'AI_AGENT_API_TOKEN',
      'FACE_API_TOKEN',
      'MEDLLM_API_TOKEN',
      'REASONING_API_TOKEN',
      'TASK_AGENT_API_TOKEN',
      'STT_API_TOKEN',
      'OCR_API_TOKEN',
      'TTS_API_TOKEN',
      'CODE_SEARCH_API_TOKEN',
      'PATIENT_SIM_API_TOKEN',
    ]);
  });

  it('has acyclic default dependencies', () => {
    expect(findCycle(COMPONENT_KEYS, (k) => COMPONENTS[k].dependsOn)).toBeNull();
  });

  it('lets a store reader read only an owner that has a store and reads none itself', () => {
    const readers = COMPONENT_KEYS.filter((k) => COMPONENTS[k].readsStoreOf !== undefined);
    expect(readers).toEqual(['taskProxy']);
    for (const reader of readers) {
      const owner = COMPONENTS[COMPONENTS[reader].readsStoreOf!];
      expect(owner.readsStoreOf).toBeUndefined();
      expect(owner.sharedStoreEnv ?? owner.embeddedStore).toBeDefined();
      // It calls the owner, so it receives the owner's token and URL.
      expect(COMPONENTS[reader].dependsOn).toContain(owner.key);
    }
  });
});

describe('dependency graph', () => {
  it('defaults dependsOn to the enabled catalogue dependencies', () => {
    const services: ServicesLike = { agent: on, llm: on, ocr: on, face: { enabled: false } };
    expect(effectiveDependsOn(services, 'agent')).toEqual(['llm', 'ocr']);
    expect(
      effectiveDependsOn({ ...services, agent: { enabled: true, dependsOn: ['ocr'] } }, 'agent'),
    ).toEqual(['ocr']);
  });

  it('wires the task agent to the code search only when it is enabled', () => {
    expect(effectiveDependsOn({ taskAgent: on, llm: on }, 'taskAgent')).toEqual(['llm']);
    expect(effectiveDependsOn({ taskAgent: on, llm: on, codeSearch: on }, 'taskAgent')).toEqual([
      'llm',
      'codeSearch',
    ]);
    expect(dependencyOrder({ taskProxy: on, taskAgent: on })).toEqual(['taskAgent', 'taskProxy']);
  });

  it('orders every enabled component after its dependencies, catalogue order breaking ties', () => {
    const all: ServicesLike = Object.fromEntries(COMPONENT_KEYS.map((k) => [k, on]));
    expect(dependencyOrder(all)).toEqual([
      'llm',
      'face',
      'medllm',
      'stt',
      'ocr',
      'tts',
      'codeSearch',
      'reasoning',
      'taskAgent',
      'taskProxy',
      'patientSim',
      'agent',
    ]);
    expect(dependentsOf(all, 'llm')).toEqual(['agent', 'reasoning', 'taskAgent', 'patientSim']);
  });

  it('follows explicit dependsOn and throws on a cycle', () => {
    expect(dependencyOrder({ stt: { enabled: true, dependsOn: ['tts'] }, tts: on })).toEqual(['tts', 'stt']);
    expect(() =>
      dependencyOrder({
        stt: { enabled: true, dependsOn: ['tts'] },
        tts: { enabled: true, dependsOn: ['stt'] },
      }),
    ).toThrow('dependency cycle: stt -> tts -> stt');
  });
});
