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
