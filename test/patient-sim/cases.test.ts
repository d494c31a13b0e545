import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ConfigError } from '@clinicalsuite/kit';
import { CaseFileError, loadCases } from '../../services/patient-sim/src/adapters/case-files.js';
import { buildPatientSimApp } from '../../services/patient-sim/src/app.js';
import { BUILTIN_CASES_DIR, loadPatientSimConfig } from '../../services/patient-sim/src/config.js';
import { disclose } from '../../services/patient-sim/src/domain/disclosure.js';
import { CaseSchema, type CaseFile } from '../../services/patient-sim/src/schemas/case.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function caseDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'patient-cases-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files))
    writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  return dir;
}
const shipped = loadCases([BUILTIN_CASES_DIR]);
const base = (): CaseFile =>
  JSON.parse(readFileSync(join(BUILTIN_CASES_DIR, 'en-cough-chest-pain-miller.json'), 'utf8')) as CaseFile;

describe('the shipped cases', () => {
  it('validate: two in Vietnamese and two in English, each with sources and an ICD-10 code', () => {
    const all = [...shipped.values()].map((l) => l.case);
    expect(all.filter((c) => c.language === 'vi').length).toBeGreaterThanOrEqual(2);
    expect(all.filter((c) => c.language === 'en').length).toBeGreaterThanOrEqual(2);
    for (const c of all) {
      expect(c.sources.length).toBeGreaterThan(0);
      expect(c.diagnosis.icd10).toMatch(/^[A-Z]\d\d/);
      for (const kind of ['vital_sign', 'examination', 'investigation'])
        expect(c.findings.some((f) => f.kind === kind)).toBe(true);
    }
  });

  it('every fact and finding can be reached by one of its own keywords', () => {
    for (const { case: c } of shipped.values()) {
      for (const f of c.facts) {
        for (const k of [...f.topics.vi, ...f.topics.en])
          expect(disclose(c, k, new Set()).newFacts.map((x) => x.id)).toContain(f.id);
      }
      for (const f of c.findings) {
        const ask = f.kind === 'investigation' ? `order ${f.topics.en[0]!}` : `examine ${f.topics.en[0]!}`;
        expect(disclose(c, ask, new Set()).findings.map((x) => x.id)).toContain(f.id);
      }
    }
  });
});

describe('a case directory', () => {
  it('adds valid user cases to the shipped ones', () => {
    const c = { ...base(), id: 'user-case' };
    const loaded = loadCases([BUILTIN_CASES_DIR, caseDir({ 'user.json': c })]);
    expect(loaded.size).toBe(shipped.size + 1);
    expect(loaded.get('user-case')?.case.title).toBe(c.title);
  });

  it('lists every problem of every file: bad JSON, schema errors with their path, duplicate ids', () => {
    const noTopics = base();
    noTopics.id = 'no-topics';
    (noTopics.facts[0] as { topics: unknown }).topics = { vi: [], en: ['fever'] };
    const badCode = { ...base(), id: 'bad-code', diagnosis: { ...base().diagnosis, icd10: 'pneumonia' } };
    const dir = caseDir({
      'a.json': '{ not json',
      'b.json': noTopics,
      'c.json': badCode,
      'd.json': base(), // same id as a shipped case
      'ignored.txt': 'not a case',
    });
    let error: unknown;
    try {
      loadCases([BUILTIN_CASES_DIR, dir]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CaseFileError);
    const problems = (error as CaseFileError).problems.join('\n');
    expect(problems).toContain(`${join(dir, 'a.json')}: not valid JSON`);
    expect(problems).toContain(`${join(dir, 'b.json')}: facts[0].topics.vi: at least one Vietnamese keyword`);
    expect(problems).toContain(`${join(dir, 'c.json')}: diagnosis.icd10: an ICD-10 code`);
    expect(problems).toContain(
      `${join(dir, 'd.json')}: case id "en-cough-chest-pain-miller" is also used by`,
    );
  });

  it('refuses a case whose spoken text names the diagnosis (it would reach the model)', () => {
    const c = base();
    c.facts[0]!.text = 'My GP said it might be pneumonia.';
    const result = CaseSchema.safeParse(c);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]).toMatchObject({ path: ['facts', 0, 'text'] });
    expect(result.error?.issues[0]?.message).toContain('names the diagnosis ("pneumonia"); this text');
  });

  it('refuses duplicate fact or finding ids', () => {
    const c = base();
    c.findings[0]!.id = c.facts[0]!.id;
    const result = CaseSchema.safeParse(c);
    expect(result.error?.issues[0]?.message).toContain(`duplicate id "${c.facts[0]!.id}"`);
  });

  it('stops the service at start with a configuration error naming the file', () => {
    const dir = caseDir({ 'broken.json': { schema_version: 1, id: 'x' } });
    const config = loadPatientSimConfig({
      LLM_URL: 'http://127.0.0.1:9',
      PATIENT_CASES_DIR: dir,
      AUTH_DISABLED: 'true',
    });
    expect(() => buildPatientSimApp({ config })).toThrow(ConfigError);
    expect(() => buildPatientSimApp({ config })).toThrow(/broken\.json: language/);
  });

  it('an empty or missing directory is an error too', () => {
    expect(() => loadCases([caseDir({})])).toThrow(/no case files/);
    expect(() => loadCases(['/nonexistent/cases'])).toThrow(/cannot be read \(ENOENT\)/);
  });
});

describe('configuration', () => {
  it('needs LLM_URL, naming it', () => {
    expect(() => loadPatientSimConfig({})).toThrow(/LLM_URL: is required but not set/);
    expect(() => loadPatientSimConfig({ LLM_URL: 'not a url' })).toThrow(/LLM_URL: must be an http\(s\) URL/);
  });

  it('has the catalogue port and concurrency as defaults', () => {
    const config = loadPatientSimConfig({ LLM_URL: 'http://llm:8001' });
    expect(config.PORT).toBe(8015);
    expect(config.MAX_CONCURRENCY).toBe(8);
  });
});
