import { describe, expect, it, jest } from '@jest/globals';

// Where onnxruntime-node cannot load (no native binding for the platform), loadEngine scores with
// the reference engine and says so; OnnxEngine.create itself fails with a clear error.

jest.unstable_mockModule('onnxruntime-node', () => {
  throw new Error('no native binding for this platform (simulated)');
});

const { compileModel, EngineUnavailableError, loadEngine, OnnxEngine } =
  await import('../../services/reasoning/src/engine/index.js');
const { SYNTHETIC_KB } = await import('./fixtures/synthetic-kb.js');

describe('without onnxruntime', () => {
  const model = compileModel(SYNTHETIC_KB);

  it('falls back to the reference engine, reported as such', async () => {
    const engine = await loadEngine(model, { device: 'auto', gpuAvailable: true });
    expect(engine.info).toMatchObject({ kind: 'reference', device: 'js', requestedDevice: 'auto' });
    expect(engine.info.fallbackReason).toMatch(/onnxruntime-node cannot load: .*simulated.*reference engine/);
    const result = await engine.score([{ feature: 'syn-spot', present: true, certainty: 1 }]);
    expect(result.ranked[0]!.condition).toBe('syn-alpha');
    expect(engine.stats()).toEqual({ runs: 1, requestsScored: 1, largestBatch: 1 });
  });

  it('fails with a clear error where falling back is not allowed, CUDA is required, or the ONNX engine is asked for', async () => {
    await expect(loadEngine(model, { fallbackToReference: false })).rejects.toBeInstanceOf(
      EngineUnavailableError,
    );
    await expect(loadEngine(model, { device: 'cuda' })).rejects.toThrow(/onnxruntime-node cannot load/);
    await expect(OnnxEngine.create(model)).rejects.toThrow(/onnxruntime-node cannot load/);
  });
});
