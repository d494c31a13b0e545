import { describe, expect, it } from '@jest/globals';
import {
  ANNOTATION_CONFIG_HASH,
  buildDeployment,
  DEFAULT_OPERATOR_CONFIG,
  type OwnedSuite,
} from '../../../operator/src/resources/index.js';
import { suiteWith } from './fixtures.js';

const config = DEFAULT_OPERATOR_CONFIG;
const hashOf = (suite: OwnedSuite, key: 'llm' | 'stt') =>
  buildDeployment(suite, key, config).spec.template.metadata.annotations[ANNOTATION_CONFIG_HASH];

describe('config hash', () => {
  const base = { llm: { enabled: true, replicas: 1, concurrency: 2 } };
  const hash = hashOf(suiteWith(base), 'llm');

  it('changes with the concurrency limit', () => {
    expect(hashOf(suiteWith({ llm: { ...base.llm, concurrency: 3 } }), 'llm')).not.toBe(hash);
  });

  it('changes with the model, even when MODEL_PATH stays', () => {
    expect(hashOf(suiteWith({ llm: { ...base.llm, model: { file: 'other.gguf' } } }), 'llm')).not.toBe(hash);
    const a = { source: 'https://example.org/v1/m.gguf' };
    const b = { source: 'https://example.org/v2/m.gguf' };
    expect(hashOf(suiteWith({ llm: { ...base.llm, model: a } }), 'llm')).not.toBe(
      hashOf(suiteWith({ llm: { ...base.llm, model: b } }), 'llm'),
    );
  });

  it('does not change with replicas, resources or the volume size', () => {
    expect(hashOf(suiteWith({ llm: { ...base.llm, replicas: 4 } }), 'llm')).toBe(hash);
    expect(hashOf(suiteWith({ llm: { ...base.llm, resourceProfile: 'nvidia-gpu-l4:2' } }), 'llm')).toBe(hash);
    expect(hashOf(suiteWith({ llm: { ...base.llm, model: { size: '50Gi' } } }), 'llm')).toBe(hash);
  });
});
