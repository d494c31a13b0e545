import { describe, expect, it } from '@jest/globals';
import {
  buildConfigMap,
  buildDeployment,
  buildModelPvc,
  DEFAULT_OPERATOR_CONFIG,
} from '../../../operator/src/resources/index.js';
import { suiteWith } from './fixtures.js';

const config = DEFAULT_OPERATOR_CONFIG;

describe('model volume', () => {
  it('with retainModels has no ownerReference and says it is kept', () => {
    const pvc = buildModelPvc(suiteWith({ llm: { enabled: true } }, { retainModels: true }), 'llm');
    expect(pvc?.metadata).not.toHaveProperty('ownerReferences');
    expect(pvc?.metadata.annotations).toEqual({ 'clinicalsuite.ai/resource-policy': 'keep' });
    const owned = buildModelPvc(suiteWith({ llm: { enabled: true } }), 'llm');
    expect(owned?.metadata.ownerReferences).toHaveLength(1);
  });

  it('takes size, storage class and access mode from the spec, with a per-component default size', () => {
    const spec = { size: '8Gi', storageClass: 'fast', accessMode: 'ReadWriteMany' };
    expect(buildModelPvc(suiteWith({ llm: { enabled: true, model: spec } }), 'llm')?.spec).toEqual({
      accessModes: ['ReadWriteMany'],
      storageClassName: 'fast',
      resources: { requests: { storage: '8Gi' } },
    });
    expect(buildModelPvc(suiteWith({ llm: { enabled: true } }), 'llm')?.spec.resources.requests.storage).toBe(
      '10Gi',
    );
  });

  it('is not created for an existingClaim, which is mounted read-only with no fetch', () => {
    const suite = suiteWith({ llm: { enabled: true, model: { existingClaim: 'shared-models' } } });
    expect(buildModelPvc(suite, 'llm')).toBeNull();
    const pod = buildDeployment(suite, 'llm', config).spec.template.spec;
    expect(pod.initContainers).toBeUndefined();
    expect(pod.volumes[0]).toEqual({ name: 'models', persistentVolumeClaim: { claimName: 'shared-models' } });
    expect(pod.containers[0]!.volumeMounts[0]).toEqual({
      name: 'models',
      mountPath: '/models',
      readOnly: true,
    });
  });

  it('is filled by the model store CLI, read-write only in the init container', () => {
    const suite = suiteWith({
      llm: { enabled: true, model: { source: 'hf://o/r/m.gguf', sha256: 'a'.repeat(64) } },
    });
    const pod = buildDeployment(suite, 'llm', config).spec.template.spec;
    const init = pod.initContainers?.[0];
    expect(init?.command).toEqual([
      'node',
      'services/kit/dist/models/cli.js',
      'fetch',
      'hf://o/r/m.gguf',
      '--dest',
      '/models/llm/m.gguf',
      '--models-dir',
      '/models',
      '--sha256',
      'a'.repeat(64),
    ]);
    expect(init?.volumeMounts).toContainEqual({ name: 'models', mountPath: '/models' });
    expect(buildConfigMap(suite, 'llm').data['MODEL_PATH']).toBe('/models/llm/m.gguf');
  });

  it('is absent for a component without a model', () => {
    const suite = suiteWith({ stt: { enabled: true } });
    expect(buildModelPvc(suite, 'stt')).toBeNull();
    expect(buildDeployment(suite, 'stt', config).spec.template.spec.volumes.map((v) => v.name)).toEqual([
      'data',
      'tmp',
    ]);
  });
});
