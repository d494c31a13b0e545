import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { search, startCodesearch, type CodesearchTestServer } from './helpers.js';

// The import CLI (the built dist/cli.js, as a user runs it) against a running service that picks
// imports up: a valid file replaces the set, a bad one is refused with line numbers and changes nothing.

const CLI = join(process.cwd(), 'services/codesearch/dist/cli.js');
const run = promisify(execFile);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args]);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

// A hospital's own service catalogue (SERVICE codes are the user's data, not a licensed set).
const SERVICES_CSV = [
  'code,title_vi,title_en,synonyms,parent',
  'KB,Khám bệnh,Consultations,,',
  'KB01,Khám nội tổng quát,General internal medicine consultation,khám nội|khám tổng quát,KB',
  'KB02,"Khám tim mạch, điện tim","Cardiology consultation, ECG",khám tim,KB',
  'XN,Xét nghiệm,Laboratory tests,,',
  'XN01,Định lượng HbA1c,HbA1c measurement,xét nghiệm đường huyết dài hạn,XN',
  'XN02,Tổng phân tích nước tiểu,Urinalysis,,XN',
].join('\n');

const BAD_CSV = [
  'code,title_vi,title_en,synonyms,parent',
  'KB03,Khám nhi,Paediatric consultation,,KB',
  'KB04,,,,KB',
  'KB05,"Khám ngoại,Surgical consultation,,KB',
].join('\n');

let srv: CodesearchTestServer;
let dir: string;

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npx tsc -b services/codesearch)`);
  dir = mkdtempSync(join(tmpdir(), 'codesearch-import-'));
  srv = await startCodesearch({
    CODESEARCH_EMBEDDINGS: 'off',
    CODESEARCH_BUILTIN_SETS: 'false',
    CODESEARCH_RELOAD_POLL_MS: '100',
  });
}, 60_000);
afterAll(() => srv.close());

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('codesearch import CLI', () => {
  it('imports a valid CSV set, which the running service then searches', async () => {
    const before = await search(srv.url, { query: 'khám tim', code_types: ['SERVICE'] });
    expect(before.body.missing_types).toEqual(['SERVICE']);
    const file = join(dir, 'services.csv');
    writeFileSync(file, SERVICES_CSV);
    const result = await cli(['import', '--type', 'SERVICE', '--file', file, '--data-dir', srv.dataDir]);
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toMatch(/imported 6 SERVICE codes from services\.csv/);
    await waitFor(
      async () =>
        (await search(srv.url, { query: 'kham tim', code_types: ['SERVICE'] })).body.results.length > 0,
    );
    const found = await search(srv.url, { query: 'kham tim', code_types: ['SERVICE'] });
    expect(found.body.missing_types).toEqual([]);
    expect(found.body.results[0]).toMatchObject({
      code: 'KB02',
      title_vi: 'Khám tim mạch, điện tim',
      title_vi_source: 'import',
      parent: { code: 'KB', title: 'Consultations' },
    });
    const listed = await cli(['list', '--data-dir', srv.dataDir]);
    expect(listed.stdout).toMatch(/SERVICE\t6 codes\tservices\.csv\tcsv/);
  });

  it('refuses a bad file with line-numbered errors and keeps the loaded set', async () => {
    const stored = join(srv.dataDir, 'codesearch', 'sets', 'SERVICE.jsonl');
    const kept = readFileSync(stored, 'utf8');
    const file = join(dir, 'bad.csv');
    writeFileSync(file, BAD_CSV);
    const result = await cli(['import', '--type', 'SERVICE', '--file', file, '--data-dir', srv.dataDir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/import refused, nothing was changed/);
    expect(result.stderr).toContain(`${file}:3: title_en: title_vi or title_en is required`);
    expect(result.stderr).toContain(`${file}:4: unterminated quoted field`);
    expect(readFileSync(stored, 'utf8')).toBe(kept);
    const still = await search(srv.url, { query: 'HbA1c', code_types: ['SERVICE'] });
    expect(still.body.results[0]?.code).toBe('XN01');
  });

  it('validates JSONL line by line: duplicates, wrong type, bad JSON', async () => {
    const file = join(dir, 'icpc.jsonl');
    writeFileSync(
      file,
      [
        JSON.stringify({ code: 'A01', title_en: 'Pain general/multiple sites' }),
        JSON.stringify({ code: 'A01', title_en: 'again' }),
        JSON.stringify({ code: 'A02', type: 'CPT', title_en: 'Chills' }),
        '{"code": "A03", ',
        JSON.stringify({ code: 'A 04', title_en: 'Tiredness' }),
      ].join('\n'),
    );
    const result = await cli(['import', '--type', 'ICPC2', '--file', file, '--data-dir', srv.dataDir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(':2: duplicate code A01 (first on line 1)');
    expect(result.stderr).toContain(':3: type is "CPT" but the import is for ICPC2');
    expect(result.stderr).toMatch(/:4: invalid JSON/);
    expect(result.stderr).toMatch(/:5: code: code: letters, digits/);
    expect(existsSync(join(srv.dataDir, 'codesearch', 'sets', 'ICPC2.jsonl'))).toBe(false);
  });

  it('names the usage on a bad command line', async () => {
    expect((await cli(['import', '--type', 'ICD9', '--file', 'x.csv'])).code).toBe(2);
    expect((await cli(['import', '--type', 'CPT'])).stderr).toMatch(/--file is required/);
    const missing = await cli([
      'import',
      '--type',
      'CPT',
      '--file',
      join(dir, 'none.csv'),
      '--data-dir',
      dir,
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no such file/);
  });
});
