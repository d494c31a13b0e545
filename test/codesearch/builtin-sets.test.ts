import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { createLogger } from '@clinicalsuite/kit';
import { MODEL_MANIFEST } from '../../services/kit/src/models/index.js';
import { importBuiltinSets } from '../../services/codesearch/src/adapters/builtin-sets.js';
import { CodeStore } from '../../services/codesearch/src/adapters/code-store.js';
import type { BuiltinSet } from '../../services/codesearch/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { search, startCodesearch } from './helpers.js';

// The built-in import at start must never replace a stored set it cannot read: the file may be the
// user's own import (a licensed WHO or Ministry of Health ICD-10), and only a missing file means
// "no set". A tiny ICD-10-CM tabular file stands in for the fetched one.

const TABULAR = `<?xml version="1.0" encoding="utf-8"?>
<ICD10CM.tabular><chapter><name>10</name><desc>Diseases of the respiratory system (J00-J99)</desc>
<section id="J09-J18"><desc>Influenza and pneumonia (J09-J18)</desc>
<diag><name>J13</name><desc>Pneumonia due to Streptococcus pneumoniae</desc></diag>
</section></chapter></ICD10CM.tabular>
`;

/** A data dir whose ICD10 set is the user's own, and a models dir holding the "fetched" ICD-10-CM. */
async function setUp(): Promise<{
  dataDir: string;
  modelsDir: string;
  store: CodeStore;
  builtin: BuiltinSet;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), 'codesearch-builtin-'));
  const modelsDir = mkdtempSync(join(tmpdir(), 'codesearch-builtin-models-'));
  const entry = MODEL_MANIFEST['codesearch-icd10cm'];
  if (entry === undefined) throw new Error('no codesearch-icd10cm in the manifest');
  const path = join(modelsDir, entry.file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, TABULAR);
  const store = new CodeStore(dataDir);
  await store.write(
    {
      type: 'ICD10',
      source: 'Bộ Y tế ICD-10 (licensed)',
      format: 'csv',
      license: 'user licence',
      sha256: 'a'.repeat(64),
      imported_at: '2026-01-01T00:00:00.000Z',
    },
    [
      {
        code: 'J18.9',
        type: 'ICD10',
        title_vi: 'Viêm phổi, không đặc hiệu',
        title_en: null,
        synonyms: [],
        parent: null,
      },
    ],
  );
  const builtin: BuiltinSet = {
    id: 'codesearch-icd10cm',
    type: 'ICD10',
    path,
    format: 'icd10cm-xml',
    license: entry.license,
  };
  return { dataDir, modelsDir, store, builtin };
}

/** The stored file with its header line replaced. */
function damageHeader(store: CodeStore, header: string): string {
  const file = store.fileOf('ICD10');
  const text = readFileSync(file, 'utf8');
  const damaged = header + text.slice(text.indexOf('\n'));
  writeFileSync(file, damaged);
  return damaged;
}

describe('built-in code sets', () => {
  it('are imported when no set of the type is stored, and never over a readable user set', async () => {
    const { store, builtin } = await setUp();
    const { destination } = captureLogs();
    const logger = createLogger({ service: 'codesearch', level: 'info', destination });
    const user = readFileSync(store.fileOf('ICD10'), 'utf8');
    expect(await importBuiltinSets(store, [builtin], logger)).toEqual([]);
    expect(readFileSync(store.fileOf('ICD10'), 'utf8')).toBe(user);
    const empty = new CodeStore(mkdtempSync(join(tmpdir(), 'codesearch-builtin-empty-')));
    expect(await importBuiltinSets(empty, [builtin], logger)).toEqual([]);
    expect(await empty.readMeta('ICD10')).toMatchObject({
      source: 'model store: codesearch-icd10cm',
      count: 1,
    });
  });

  it.each([
    ['a header that is not JSON', '{"meta":{"type":"ICD10","source":"Bộ Y'],
    ['a header without its fields', '{"meta":{"type":"ICD10"}}'],
    ['an empty header line', ''],
  ])('leave a stored set with %s untouched, and say which file and what to do', async (_, header) => {
    const { store, builtin } = await setUp();
    const damaged = damageHeader(store, header);
    const { logs, destination } = captureLogs();
    const logger = createLogger({ service: 'codesearch', level: 'info', destination });
    const problems = await importBuiltinSets(store, [builtin], logger);
    expect(readFileSync(store.fileOf('ICD10'), 'utf8')).toBe(damaged);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(store.fileOf('ICD10'));
    expect(problems[0]).toMatch(/line 1 \(the header\)/);
    expect(problems[0]).toMatch(/import --type ICD10/);
    expect(problems[0]).toMatch(/remove the file and restart/);
    const error = logs.find((l) => l['level'] === 'error');
    expect(error).toMatchObject({ type: 'ICD10', path: store.fileOf('ICD10'), msg: problems[0] });
  });

  it('a service whose stored set is damaged serves the other types and reports this one as damaged', async () => {
    const { dataDir, modelsDir, store } = await setUp();
    const damaged = damageHeader(store, '{"meta":');
    await store.write(
      {
        type: 'ICPC2',
        source: 'WONCA ICPC-2 (licensed)',
        format: 'csv',
        license: 'user licence',
        sha256: 'b'.repeat(64),
        imported_at: '2026-01-01T00:00:00.000Z',
      },
      [{ code: 'R81', type: 'ICPC2', title_vi: null, title_en: 'Pneumonia', synonyms: [], parent: null }],
    );
    const sim = await startCodesearch({
      DATA_DIR: dataDir,
      MODELS_DIR: modelsDir,
      CODESEARCH_EMBEDDINGS: 'off',
      CODESEARCH_RELOAD_POLL_MS: '0',
    });
    try {
      // Not replaced by the built-in ICD-10-CM, and not served.
      expect(readFileSync(store.fileOf('ICD10'), 'utf8')).toBe(damaged);
      const health = (await (await fetch(`${sim.url}/health`)).json()) as Record<string, unknown>;
      expect(health).toMatchObject({ status: 'healthy', types: ['ICPC2'], damaged_types: ['ICD10'] });
      const types = (await (await fetch(`${sim.url}/code_types`)).json()) as {
        missing_types: string[];
        damaged_types: { type: string; file: string; problem: string; hint: string }[];
      };
      expect(types.missing_types).toContain('ICD10');
      expect(types.damaged_types).toEqual([
        {
          type: 'ICD10',
          file: store.fileOf('ICD10'),
          problem: expect.stringMatching(/line 1 \(the header\) is not JSON/),
          hint: expect.stringMatching(/import --type ICD10/),
        },
      ]);
      // A search over every type warns about it (not only one that names ICD10).
      const all = await search(sim.url, { query: 'pneumonia' });
      expect(all.body.missing_types).toContain('ICD10');
      expect(all.body.warnings).toEqual([expect.stringContaining(store.fileOf('ICD10'))]);
      expect(all.body.results.map((r) => `${r.type} ${r.code}`)).toEqual(['ICPC2 R81']);
      const code = await fetch(`${sim.url}/codes/ICD10/J13`);
      expect(code.status).toBe(404);
      expect(JSON.stringify(await code.json())).toContain('cannot be read');
      const logged = sim.logs.filter((l) => l['level'] === 'error').map((l) => String(l['msg']));
      expect(
        logged.some((m) => m.includes(store.fileOf('ICD10')) && m.includes('not imported over it')),
      ).toBe(true);
    } finally {
      await sim.close();
    }
  });
});
