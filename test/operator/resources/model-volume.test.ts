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
    const suite = suiteWith({ ocr: { enabled: true } });
    expect(buildModelPvc(suite, 'ocr')).toBeNull();
    expect(buildDeployment(suite, 'ocr', config).spec.template.spec.volumes.map((v) => v.name)).toEqual([
      'data',
      'tmp',
    ]);
  });

  describe('a multimodal projector (medllm)', () => {
    const sha = 'c'.repeat(64);
    const medllm = (model: Record<string, unknown>) => suiteWith({ medllm: { enabled: true, model } });
    const inits = (suite: ReturnType<typeof medllm>) =>
      buildDeployment(suite, 'medllm', config).spec.template.spec.initContainers ?? [];

    it('is fetched into the model volume after the model, by the same CLI, and named by MMPROJ_PATH', () => {
      const suite = medllm({
        source: 'hf://org/medgemma-GGUF/medgemma-Q4_K_M.gguf',
        projector: { source: 'hf://org/medgemma-GGUF/mmproj-f16.gguf@abc123', sha256: sha },
      });
      expect(inits(suite).map((c) => c.name)).toEqual(['fetch-model', 'fetch-projector']);
      expect(inits(suite)[1]?.command).toEqual([
        'node',
        'services/kit/dist/models/cli.js',
        'fetch',
        'hf://org/medgemma-GGUF/mmproj-f16.gguf@abc123',
        '--dest',
        '/models/medllm/mmproj-f16.gguf',
        '--models-dir',
        '/models',
        '--sha256',
        sha,
      ]);
      expect(inits(suite)[1]?.volumeMounts).toContainEqual({ name: 'models', mountPath: '/models' });
      const data = buildConfigMap(suite, 'medllm').data;
      expect(data['MODEL_PATH']).toBe('/models/medllm/medgemma-Q4_K_M.gguf');
      expect(data['MMPROJ_PATH']).toBe('/models/medllm/mmproj-f16.gguf');
      expect(buildModelPvc(suite, 'medllm')).not.toBeNull();
    });

    it('goes where projector.file says, and the spec env still wins', () => {
      const suite = suiteWith({
        medllm: {
          enabled: true,
          model: {
            source: 'https://h/m.gguf',
            projector: { source: 'https://h/p.gguf', file: 'v2/mmproj.gguf' },
          },
          env: [{ name: 'MMPROJ_PATH', value: '/elsewhere/mmproj.gguf' }],
        },
      });
      expect(inits(suite)[1]?.command).toContain('/models/medllm/v2/mmproj.gguf');
      expect(buildConfigMap(suite, 'medllm').data['MMPROJ_PATH']).toBe('/elsewhere/mmproj.gguf');
    });

    it('is fetched even when the model file is placed by hand (model.file, no source)', () => {
      const suite = medllm({ file: 'model.gguf', projector: { source: 'https://h/mmproj.gguf' } });
      expect(inits(suite).map((c) => c.name)).toEqual(['fetch-projector']);
      expect(buildConfigMap(suite, 'medllm').data['MMPROJ_PATH']).toBe('/models/medllm/mmproj.gguf');
    });

    it('on an existing claim is named but never fetched', () => {
      const suite = medllm({ existingClaim: 'medgemma', file: 'm.gguf', projector: { file: 'mmproj.gguf' } });
      expect(buildDeployment(suite, 'medllm', config).spec.template.spec.initContainers).toBeUndefined();
      expect(buildConfigMap(suite, 'medllm').data['MMPROJ_PATH']).toBe('/models/medllm/mmproj.gguf');
    });

    it('rolls the pods when it changes, and leaves a medllm without one as it was', () => {
      const hash = (model: Record<string, unknown>) =>
        buildDeployment(medllm(model), 'medllm', config).spec.template.metadata.annotations[
          'clinicalsuite.ai/config-hash'
        ];
      const base = { source: 'https://h/m.gguf' };
      const withProjector = hash({ ...base, projector: { source: 'https://h/p.gguf' } });
      expect(withProjector).not.toBe(hash(base));
      expect(hash({ ...base, projector: { source: 'https://h/p.gguf', sha256: sha } })).not.toBe(
        withProjector,
      );
      expect(buildConfigMap(medllm(base), 'medllm').data).not.toHaveProperty('MMPROJ_PATH');
    });
  });
});
