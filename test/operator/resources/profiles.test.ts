import { describe, expect, it } from '@jest/globals';
import {
  buildDeployment,
  compareQuantities,
  DEFAULT_OPERATOR_CONFIG,
  multiplyQuantity,
  parseOperatorConfig,
  resolvePlacement,
  ResourceProfileError,
} from '../../../operator/src/resources/index.js';
import { suiteWith } from './fixtures.js';

const config = DEFAULT_OPERATOR_CONFIG;

function container(suite: ReturnType<typeof suiteWith>, key: 'llm' | 'agent' | 'stt', cfg = config) {
  return buildDeployment(suite, key, cfg).spec.template.spec.containers[0]!;
}

describe('resource profiles', () => {
  it('nvidia-gpu-l4:2 asks for 2 GPUs in requests and limits, on L4 nodes, CUDA image', () => {
    const suite = suiteWith({ llm: { enabled: true, resourceProfile: 'nvidia-gpu-l4:2' } });
    const deployment = buildDeployment(suite, 'llm', config);
    const pod = deployment.spec.template.spec;
    const main = pod.containers[0]!;
    expect(main.resources.requests).toEqual({ cpu: '12', memory: '48Gi', 'nvidia.com/gpu': '2' });
    expect(main.resources.limits).toEqual({ memory: '48Gi', 'nvidia.com/gpu': '2' });
    expect(pod.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-L4' });
    expect(pod.tolerations).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(pod.runtimeClassName).toBe('nvidia');
    expect(main.image).toBe('ghcr.io/clinicalsuite/clinicalsuite:0.1.0-cuda');
    // A rollout must not need a third GPU.
    expect(deployment.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 0, maxUnavailable: 1 },
    });
  });

  it('cpu:3 multiplies the per-unit values and asks for no GPU, no node selector, no runtime class', () => {
    const suite = suiteWith({ stt: { enabled: true, resourceProfile: 'cpu:3' } });
    const pod = buildDeployment(suite, 'stt', config).spec.template.spec;
    expect(pod.containers[0]!.resources).toEqual({
      limits: { memory: '6Gi' },
      requests: { cpu: '3', memory: '6Gi' },
    });
    expect(pod).not.toHaveProperty('nodeSelector');
    expect(pod).not.toHaveProperty('tolerations');
    expect(pod).not.toHaveProperty('runtimeClassName');
    expect(pod.containers[0]!.image).toBe('ghcr.io/clinicalsuite/clinicalsuite:0.1.0');
  });

  it('uses the suite default GPU profile for GPU components and the CPU default for the rest', () => {
    const suite = suiteWith(
      { llm: { enabled: true }, stt: { enabled: true } },
      { defaultGpuResourceProfile: 'nvidia-gpu-h100:1', defaultResourceProfile: 'cpu:2' },
    );
    expect(resolvePlacement(suite, 'llm', config)).toMatchObject({ profile: 'nvidia-gpu-h100:1', gpus: 1 });
    expect(resolvePlacement(suite, 'stt', config)).toMatchObject({ profile: 'cpu:2', gpus: 0 });
  });

  it('takes explicit resources as given, with no profile placement', () => {
    const suite = suiteWith({
      agent: {
        enabled: true,
        resources: { requests: { memory: '1Gi', cpu: '500m' }, limits: { memory: '2Gi' } },
      },
    });
    expect(container(suite, 'agent').resources).toEqual({
      limits: { memory: '2Gi' },
      requests: { cpu: '500m', memory: '1Gi' },
    });
  });

  it('makes explicit resources with a GPU limit a GPU pod, placed as the suite default GPU profile', () => {
    // The schema's own example: limits {memory: 12Gi, nvidia.com/gpu: "1"}.
    const resources = {
      requests: { cpu: '4', memory: '16Gi' },
      limits: { memory: '16Gi', 'nvidia.com/gpu': '1' },
    };
    const suite = suiteWith(
      { llm: { enabled: true, resources } },
      { defaultGpuResourceProfile: 'nvidia-gpu-l4:1' },
    );
    const deployment = buildDeployment(suite, 'llm', config);
    const pod = deployment.spec.template.spec;
    expect(pod.containers[0]!.resources).toEqual(resources);
    expect(pod.containers[0]!.image).toBe('ghcr.io/clinicalsuite/clinicalsuite:0.1.0-cuda');
    expect(pod.tolerations).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(pod.runtimeClassName).toBe('nvidia');
    expect(pod.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-L4' });
    expect(deployment.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 0, maxUnavailable: 1 },
    });
    expect(resolvePlacement(suite, 'llm', config)).toMatchObject({ profile: null, gpus: 1 });
  });

  it('places explicit GPU resources the default GPU profile does not ask for by a profile of that accelerator', () => {
    const cfg = parseOperatorConfig({
      resourceProfiles: {
        'amd-mi300': {
          gpuResourceName: 'amd.com/gpu',
          gpusPerUnit: 1,
          nodeSelector: { 'amd.com/gpu.product': 'MI300X' },
          tolerations: [{ key: 'amd.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
        },
      },
    });
    const suite = suiteWith({ stt: { enabled: true, resources: { requests: { 'amd.com/gpu': '2' } } } });
    const placement = resolvePlacement(suite, 'stt', cfg);
    // The accelerator's taint is tolerated; the node selector the spec did not choose is left out.
    expect(placement).toMatchObject({
      gpus: 2,
      nodeSelector: {},
      tolerations: [{ key: 'amd.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
      runtimeClassName: null,
      imageVariant: 'cpu',
    });
  });

  it('throws a typed error naming an unknown profile', () => {
    const suite = suiteWith({ llm: { enabled: true, resourceProfile: 'tpu-v5:1' } });
    let error: unknown;
    try {
      buildDeployment(suite, 'llm', config);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ResourceProfileError);
    expect(error).toMatchObject({ profile: 'tpu-v5', component: 'llm', reason: 'UnknownResourceProfile' });
    expect((error as Error).message).toContain('"tpu-v5"');
    expect((error as Error).message).toContain('nvidia-gpu-l4');
  });

  it('rejects a count of 0 with the same error type', () => {
    const suite = suiteWith({ stt: { enabled: true, resourceProfile: 'cpu:0' } });
    expect(() => resolvePlacement(suite, 'stt', config)).toThrow(ResourceProfileError);
  });

  it('takes profiles from the operator config, over the defaults', () => {
    const cfg = parseOperatorConfig({
      resourceProfiles: {
        'amd-mi300': {
          requests: { cpu: '8', memory: '64Gi' },
          gpuResourceName: 'amd.com/gpu',
          gpusPerUnit: 1,
          imageVariant: 'cpu',
        },
        cpu: { requests: { cpu: '250m', memory: '512Mi' } },
      },
    });
    const suite = suiteWith({
      llm: { enabled: true, resourceProfile: 'amd-mi300:2' },
      stt: { enabled: true },
    });
    expect(container(suite, 'llm', cfg).resources.limits).toEqual({ 'amd.com/gpu': '2' });
    expect(container(suite, 'stt', cfg).resources).toEqual({ requests: { cpu: '250m', memory: '512Mi' } });
    expect(Object.keys(cfg.resourceProfiles)).toContain('nvidia-gpu-a100');
  });

  it('does not double the -cuda suffix of a tag that has it', () => {
    const suite = suiteWith({ llm: { enabled: true } }, { image: { tag: '1.2.3-cuda' } });
    expect(container(suite, 'llm').image).toBe('ghcr.io/clinicalsuite/clinicalsuite:1.2.3-cuda');
  });

  it('rejects an invalid operator config', () => {
    expect(() =>
      parseOperatorConfig({ resourceProfiles: { gpu: { gpuResourceName: 'nvidia.com/gpu' } } }),
    ).toThrow(/gpuResourceName and gpusPerUnit go together/);
  });
});

describe('multiplyQuantity', () => {
  it.each([
    ['500m', 3, '1500m'],
    ['1.5Gi', 2, '3Gi'],
    ['0.1', 3, '0.3'],
    ['2', 1, '2'],
    ['0.25', 2, '0.5'],
    ['16Gi', 4, '64Gi'],
  ])('%s × %d = %s', (quantity, factor, product) => expect(multiplyQuantity(quantity, factor)).toBe(product));

  it('rejects what is not a quantity', () =>
    expect(() => multiplyQuantity('lots', 2)).toThrow(/not a quantity/));
});

describe('compareQuantities', () => {
  it('orders quantities exactly across suffixes', () => {
    expect(compareQuantities('500Gi', '1Gi')).toBe(1);
    expect(compareQuantities('1G', '1Gi')).toBe(-1);
    expect(compareQuantities('1024Mi', '1Gi')).toBe(0);
    expect(compareQuantities('1500m', '1.5')).toBe(0);
    expect(compareQuantities('1e3', '1k')).toBe(0);
    expect(compareQuantities('lots', '1Gi')).toBeUndefined();
  });
});
