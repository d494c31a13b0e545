import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { getModuleVersion, type LlamaContext, type LlamaModel } from 'node-llama-cpp';
import { NATIVE_TESTED_VERSION, nativeOf } from '../../services/llm/src/adapters/native.js';

// The engine drives node-llama-cpp's native addon directly (calls internal to it), so the version
// is pinned and checked; an upgrade has to be made on purpose, with the engine's tests run again.

describe('the node-llama-cpp the engine drives', () => {
  it('is the version the engine is tested with, pinned exactly', async () => {
    const manifest = JSON.parse(
      readFileSync(new URL('../../services/llm/package.json', import.meta.url), 'utf8'),
    ) as { dependencies: Record<string, string> };
    expect(manifest.dependencies['node-llama-cpp']).toBe(NATIVE_TESTED_VERSION);
    expect(await getModuleVersion()).toBe(NATIVE_TESTED_VERSION);
  });

  it('is refused at load, naming what is missing, when its addon lacks a call the engine makes', () => {
    const noop = (): void => undefined;
    const context = {
      _ctx: {
        initBatch: noop,
        addToBatch: noop,
        decodeBatch: noop,
        sampleToken: noop,
        disposeSequence: noop,
      },
    } as unknown as LlamaContext;
    const model = {
      _model: {},
      _llama: { _bindings: { AddonSampler: Object } },
    } as unknown as LlamaModel;
    expect(() => nativeOf(context, model, '9.9.9')).toThrow(
      'node-llama-cpp 9.9.9 lacks the native calls the llm engine drives ' +
        '(context.removeTokenCellsFromSequence, context.getSequenceKvCacheMinPosition); ' +
        `it is tested with node-llama-cpp ${NATIVE_TESTED_VERSION}, which services/llm/package.json pins`,
    );
    const noSampler = { _model: {}, _llama: { _bindings: {} } } as unknown as LlamaModel;
    expect(() => nativeOf(context, noSampler, '9.9.9')).toThrow('AddonSampler');
  });
});
