import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { z } from 'zod';
import { COMPONENT_KEYS, enabledComponents, parseSuite } from '../../../operator/src/api/v1alpha1/index.js';
import type { ComponentKey } from '../../../operator/src/api/v1alpha1/index.js';
import { agentConfigSchema } from '../../../services/agent/src/config.js';
import { codesearchConfigSchema } from '../../../services/codesearch/src/config.js';
import { faceConfigSchema } from '../../../services/face/src/config.js';
import { llmConfigSchema } from '../../../services/llm/src/config.js';
import { medllmConfigSchema } from '../../../services/medllm/src/config.js';
import { ocrConfigSchema } from '../../../services/ocr/src/config.js';
import { patientSimConfigSchema } from '../../../services/patient-sim/src/config.js';
import { reasoningConfigSchema } from '../../../services/reasoning/src/config.js';
import { sttConfigSchema } from '../../../services/stt/src/config.js';
import { taskAgentConfigSchema } from '../../../services/task-agent/src/config.js';
import { taskProxyConfigSchema } from '../../../services/task-proxy/src/config.js';
import { ttsConfigSchema } from '../../../services/tts/src/config.js';

const samplesDir = fileURLToPath(new URL('../../../crds/samples/', import.meta.url));
const samples = readdirSync(samplesDir).filter((f) => f.endsWith('.yaml'));

describe('crds/samples', () => {
  it('has the local, minimal CPU, GPU and full samples', () => {
    expect(samples).toEqual(
      expect.arrayContaining(['local.yaml', 'minimal-cpu.yaml', 'gpu.yaml', 'full.yaml']),
    );
  });

  it.each(samples)('%s parses', (file) => {
    const suite = parseSuite(parse(readFileSync(samplesDir + file, 'utf8')));
    expect(suite.metadata.name).toBe(file.replace(/\.yaml$/, ''));
  });

  it('full.yaml enables every component; local.yaml lists every component', () => {
    const full = parseSuite(parse(readFileSync(samplesDir + 'full.yaml', 'utf8')));
    expect(enabledComponents(full.spec.services)).toHaveLength(COMPONENT_KEYS.length);
    const local = parseSuite(parse(readFileSync(samplesDir + 'local.yaml', 'utf8')));
    expect(Object.keys(local.spec.services).sort()).toEqual([...COMPONENT_KEYS].sort());
  });

  // A variable no service reads is a setting that silently does nothing (full.yaml once set
  // LLM_CONTEXT_SIZE; the llm reads CONTEXT_SIZE).
  const CONFIG: Record<ComponentKey, z.ZodObject> = {
    llm: llmConfigSchema,
    agent: agentConfigSchema,
    face: faceConfigSchema,
    medllm: medllmConfigSchema,
    taskProxy: taskProxyConfigSchema,
    taskAgent: taskAgentConfigSchema,
    reasoning: reasoningConfigSchema,
    stt: sttConfigSchema,
    ocr: ocrConfigSchema,
    tts: ttsConfigSchema,
    codeSearch: codesearchConfigSchema,
    patientSim: patientSimConfigSchema,
  };

  it.each(samples)('%s sets only variables its services read', (file) => {
    const suite = parseSuite(parse(readFileSync(samplesDir + file, 'utf8')));
    const unread = COMPONENT_KEYS.flatMap((key) =>
      (suite.spec.services[key]?.env ?? [])
        .map((e) => e.name)
        .filter((name) => !(name in CONFIG[key].shape))
        .map((name) => `${key}: ${name}`),
    );
    expect(unread).toEqual([]);
  });

  it('minimal-cpu.yaml asks for no GPU', () => {
    const suite = parseSuite(parse(readFileSync(samplesDir + 'minimal-cpu.yaml', 'utf8')));
    const profiles = enabledComponents(suite.spec.services).map(
      (k) => suite.spec.services[k]?.resourceProfile,
    );
    expect(profiles.every((p) => p === undefined || p.startsWith('cpu:'))).toBe(true);
  });
});
