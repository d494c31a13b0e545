import { describe, expect, it } from '@jest/globals';
import { entryFor, MODEL_MANIFEST } from '../../../operator/src/local/kit-models.js';
import type { PlannedModel } from '../../../operator/src/local/plan.js';

const planned = (over: Partial<PlannedModel>): PlannedModel => ({
  id: null,
  source: null,
  sha256: null,
  file: 'llm/x.gguf',
  path: '/h/models/llm/x.gguf',
  ...over,
});

describe('entryFor (the runner model step on the kit model store)', () => {
  it('uses the manifest entry, at the planned file', () => {
    const base = MODEL_MANIFEST['llm'];
    expect(base).toBeDefined();
    const entry = entryFor(planned({ id: 'llm', file: 'llm/mine.gguf' }), 'llm');
    expect(entry).toMatchObject({ id: 'llm', file: 'llm/mine.gguf', sources: base?.sources });
  });

  it("replaces the manifest's sources with the spec's model.source and checks its sha256", () => {
    const sha256 = 'b'.repeat(64);
    const entry = entryFor(planned({ source: 'file:///models/x.gguf', sha256 }), 'llm');
    expect(entry).toMatchObject({
      id: 'llm',
      file: 'llm/x.gguf',
      sources: ['file:///models/x.gguf'],
      sha256,
    });
    expect(entryFor(planned({ source: 'hf://o/r/f.onnx', file: 'task-agent/f.onnx' }), 'taskAgent').id).toBe(
      'task-agent',
    );
  });

  it('says where to put the file when there is no source at all', () => {
    expect(() => entryFor(planned({ id: 'no-such-model' }), 'llm')).toThrow(
      '"no-such-model" is not in the model manifest; place the file at /h/models/llm/x.gguf or set spec.services.llm.model.source',
    );
    expect(() => entryFor(planned({}), 'face')).toThrow('the spec names no model.source');
  });
});
