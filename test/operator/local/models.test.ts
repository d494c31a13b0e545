import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { parseSuite } from '../../../operator/src/api/v1alpha1/index.js';
import { entryFor, kitModelStep, MODEL_MANIFEST } from '../../../operator/src/local/kit-models.js';
import { planLocal, type PlannedModel } from '../../../operator/src/local/plan.js';

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

describe('the runner model step fetches a multimodal projector beside its model', () => {
  it('puts model and projector where MODEL_PATH and MMPROJ_PATH say, and rejects a wrong projector sha256', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-projector-'));
    try {
      const model = join(dir, 'src', 'medgemma.gguf');
      const projector = join(dir, 'src', 'mmproj-f16.gguf');
      mkdirSync(join(dir, 'src'));
      writeFileSync(model, 'GGUF model bytes');
      writeFileSync(projector, 'GGUF projector bytes');
      const sha = createHash('sha256').update('GGUF projector bytes').digest('hex');
      const plan = (projectorSha: string) =>
        planLocal(
          parseSuite({
            apiVersion: 'clinicalsuite.ai/v1alpha1',
            kind: 'ClinicalSuite',
            metadata: { name: 't' },
            spec: {
              services: {
                medllm: {
                  enabled: true,
                  model: {
                    source: pathToFileURL(model).href,
                    projector: { source: pathToFileURL(projector).href, sha256: projectorSha },
                  },
                },
              },
            },
          }),
          { home: join(dir, 'home'), servicesDir: '/s', tokens: {} },
        )[0]!;
      const spec = plan(sha);
      const step = kitModelStep(join(dir, 'home', 'models'), 0);
      const lines: string[] = [];
      for (const m of [spec.model!, ...spec.extraModels])
        await step(m, { component: 'medllm', write: (line) => lines.push(line) });
      expect(readFileSync(spec.env['MODEL_PATH']!, 'utf8')).toBe('GGUF model bytes');
      expect(readFileSync(spec.env['MMPROJ_PATH']!, 'utf8')).toBe('GGUF projector bytes');
      expect(spec.env['MMPROJ_PATH']).toBe(join(dir, 'home', 'models', 'medllm', 'mmproj-f16.gguf'));
      // Idempotent: a second run finds the verified file.
      lines.length = 0;
      await step(spec.extraModels[0]!, { component: 'medllm', write: (line) => lines.push(line) });
      expect(lines.join('\n')).toContain('model present');

      const wrong = plan('d'.repeat(64)).extraModels[0]!;
      rmSync(wrong.path);
      await expect(step(wrong, { component: 'medllm', write: () => undefined })).rejects.toThrow(/sha256/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
