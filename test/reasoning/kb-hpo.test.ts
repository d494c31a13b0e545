import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  HPO_EPSILON,
  HPO_NO_FREQUENCY_SOURCE,
  HpoImportError,
  importHpo,
  loadKnowledgeBaseOrThrow,
  parseObo,
  resolveTerm,
  UNIFORM_PRIOR_SOURCE,
  validateKb,
  type LinkRow,
} from '../../services/reasoning/src/kb/index.js';
import { main } from '../../services/reasoning/tools/hpo-import.js';

// Real HPO 2025-01-16 lines (README.md beside them): seven diseases' rows and their terms.
const FIXTURES = fileURLToPath(new URL('./kb-fixtures/hpo/', import.meta.url));
const HPOA = join(FIXTURES, 'phenotype-excerpt.hpoa');
const OBO = join(FIXTURES, 'hp-excerpt.obo');
const hpoaText = readFileSync(HPOA, 'utf8');
const oboText = readFileSync(OBO, 'utf8');

const { document, report } = importHpo(hpoaText, oboText);
const linkOf = (condition: string, feature: string): LinkRow | undefined =>
  document.links.find((l) => l.condition === condition && l.feature === feature);

describe('HPO import on the real excerpt', () => {
  it('cites the release and the documented defaults, with the HPO acknowledgement', () => {
    const m = document.manifest;
    expect(m.id).toBe('hpo-2025-01-16');
    expect(m.version).toBe('2025-01-16');
    expect(m.sources.map((s) => [s.id, s.kind])).toEqual([
      ['hpo-2025-01-16', 'ontology'],
      [HPO_NO_FREQUENCY_SOURCE, 'modelling-choice'],
      [UNIFORM_PRIOR_SOURCE, 'modelling-choice'],
      ['clinicalsuite-leak-default', 'modelling-choice'],
    ]);
    expect(m.sources[0]!.licence).toContain(
      'This product is using the Human Phenotype Ontology (version 2025-01-16). Find out more at http://www.human-phenotype-ontology.org',
    );
    expect(m.sources[0]!.citation).toContain('hp/releases/2025-01-16');
    expect(m.sources[1]!.citation).toMatch(/^HPO annotation without frequency, ClinicalSuite default/);
    expect(m.leak).toEqual({ default: 0.01, source: 'clinicalsuite-leak-default' });
  });

  it('makes the diseases conditions with their HPO names, no ICD-10 and the flagged uniform prior', () => {
    expect(document.conditions.map((c) => c.id)).toEqual([
      'OMIM:139600',
      'OMIM:155350',
      'OMIM:607084',
      'OMIM:618112',
      'ORPHA:100974',
      'ORPHA:1401',
      'ORPHA:2056',
    ]);
    expect(document.conditions.find((c) => c.id === 'ORPHA:1401')).toEqual({
      id: 'ORPHA:1401',
      icd10: null,
      title_en: 'CHAND syndrome',
      title_vi: null,
      prior: 2e-6,
      prior_source: 'uniform (no prevalence data)',
      prior_locator: null,
      notes: null,
    });
    expect(
      document.conditions.every((c) => c.icd10 === null && c.prior_source === UNIFORM_PRIOR_SOURCE),
    ).toBe(true);
  });

  it('maps HPO frequency terms to the midpoint of the range HPO defines, Obligate clamped', () => {
    expect(linkOf('ORPHA:1401', 'HP:0002164')).toEqual({
      condition: 'ORPHA:1401',
      feature: 'HP:0002164',
      probability: 0.895,
      specificity: null,
      source: 'hpo-2025-01-16',
      locator: 'phenotype.hpoa: ORPHA:1401',
      as_given: 'HP:0040281 Very frequent',
      notes: 'HP:0040281 Very frequent = 80%-99%, midpoint 89.5%',
    });
    expect(linkOf('ORPHA:1401', 'HP:0000072')?.probability).toBe(0.545); // Frequent 30-79%
    expect(linkOf('ORPHA:1401', 'HP:0004704')?.probability).toBe(0.17); // Occasional 5-29%
    expect(linkOf('ORPHA:100974', 'HP:0000118')?.probability).toBe(0.025); // Very rare 1-4%
    const obligate = linkOf('OMIM:155350', 'HP:0001355');
    expect(obligate?.probability).toBe(1 - HPO_EPSILON);
    expect(obligate?.notes).toBe('HP:0040280 Obligate = 100%; clamped to 0.999 (epsilon 0.001)');
  });

  it('keeps fractions and percentages as given, pools several cohorts, clamps 0 and 1', () => {
    expect(linkOf('OMIM:155350', 'HP:0001249')).toMatchObject({
      probability: 0.0642202, // 7/109
      as_given: '7/109',
      locator: 'phenotype.hpoa: PMID:7274594',
    });
    expect(linkOf('OMIM:155350', 'HP:0000238')).toMatchObject({ probability: 0.2, as_given: '2/10' });
    expect(linkOf('OMIM:139600', 'HP:0004322')).toMatchObject({ probability: 0.75, as_given: '75%' });
    expect(linkOf('OMIM:139600', 'HP:0001999')).toMatchObject({ probability: 0.25, as_given: '25%' });
    expect(linkOf('OMIM:607084', 'HP:0000407')).toEqual({
      condition: 'OMIM:607084',
      feature: 'HP:0000407',
      probability: 0.999,
      specificity: null,
      source: 'hpo-2025-01-16',
      locator: 'phenotype.hpoa: PMID:12833159; PMID:15841483',
      as_given: '6/6; 4/4',
      notes: '2 cohorts pooled: 10/10; clamped to 0.999 (epsilon 0.001)',
    });
    expect(linkOf('OMIM:618112', 'HP:0003251')).toMatchObject({
      probability: 0.999,
      as_given: '5/5 (MALE); 2/2',
    });
    expect(linkOf('OMIM:607084', 'HP:0008555')).toMatchObject({ probability: HPO_EPSILON, as_given: '0/4' });
  });

  it('turns NOT annotations into a probability of epsilon', () => {
    for (const [disease, term] of [
      ['ORPHA:1401', 'HP:0001270'],
      ['ORPHA:1401', 'HP:0200041'],
      ['ORPHA:2056', 'HP:0003074'],
    ] as const) {
      expect(linkOf(disease, term)).toMatchObject({
        probability: HPO_EPSILON,
        source: 'hpo-2025-01-16',
        as_given: 'NOT',
        notes: 'NOT annotation (stated absent): epsilon 0.001',
      });
    }
    expect(report.linksBy.negated).toBe(3);
  });

  it('cites the documented default for annotations without a frequency', () => {
    expect(linkOf('OMIM:139600', 'HP:0004780')).toEqual({
      condition: 'OMIM:139600',
      feature: 'HP:0004780',
      probability: 0.5,
      specificity: null,
      source: HPO_NO_FREQUENCY_SOURCE,
      locator: null,
      as_given: null,
      notes: 'HPO annotation without frequency; annotated by PMID:139600',
    });
  });

  it('takes only phenotype rows: inheritance and onset rows are counted, not linked', () => {
    expect(report.rowsByAspect).toEqual({ P: 43, I: 4, C: 1 });
    expect(linkOf('OMIM:155350', 'HP:0000006')).toBeUndefined(); // autosomal dominant inheritance
    expect(linkOf('OMIM:607084', 'HP:0003577')).toBeUndefined(); // congenital onset
    expect(report.links).toBe(document.links.length);
    expect(report.pooled).toBe(3);
    expect(report.linksBy).toEqual({
      fraction: 6,
      percentage: 2,
      frequencyTerm: 27,
      noFrequency: 2,
      negated: 3,
    });
  });

  it('names features after the ontology, with its EXACT synonyms only', () => {
    const intellectual = document.features.find((f) => f.id === 'HP:0001249');
    expect(intellectual).toMatchObject({
      kind: 'sign',
      label_en: 'Intellectual disability',
      hpo: 'HP:0001249',
    });
    expect(intellectual?.synonyms_en).toEqual([
      'Mental deficiency',
      'Mental retardation',
      'Mental retardation, nonspecific',
      'Mental-retardation',
      'Nonprogressive intellectual disability',
      'Nonprogressive mental retardation',
    ]);
    expect(intellectual?.synonyms_en).not.toContain('Dull intelligence'); // RELATED
    expect(document.features.map((f) => f.id)).toEqual(
      [...new Set(document.links.map((l) => l.feature))].sort(),
    );
  });

  it('produces a document that validates', () => {
    const result = validateKb(document);
    expect(result.problems).toEqual([]);
    expect(result.ok && result.report.modellingChoices).toEqual([
      'clinicalsuite-leak-default',
      HPO_NO_FREQUENCY_SOURCE,
      UNIFORM_PRIOR_SOURCE,
    ]);
  });

  it('keeps only the requested diseases and lists the ones it does not know', () => {
    const subset = importHpo(hpoaText, oboText, { diseases: new Set(['ORPHA:2056', 'OMIM:999999']) });
    expect(subset.document.conditions.map((c) => c.id)).toEqual(['ORPHA:2056']);
    expect(subset.document.manifest.title).toContain('a subset of 1 diseases');
    expect(subset.report.missingDiseases).toEqual(['OMIM:999999']);
    expect(subset.document.features.map((f) => f.id)).toEqual([
      'HP:0003074',
      'HP:0010969',
      'HP:0011033',
      'HP:0012379',
      'HP:0030272',
      'HP:0031979',
    ]);
  });

  it('refuses an ontology whose frequency terms say something else', () => {
    const changed = oboText.replace(
      'Present in 80% to 99% of the cases.',
      'Present in 75% to 99% of the cases.',
    );
    expect(() => importHpo(hpoaText, changed)).toThrow(HpoImportError);
    expect(() => importHpo(hpoaText, changed)).toThrow(
      /HP:0040281 reads "Very frequent: Present in 75% to 99%/,
    );
  });
});

describe('obsolete and alternative HPO ids', () => {
  const ontology = parseObo(oboText);

  it('reads the ontology file: version, licence, obsolete terms, alt ids', () => {
    expect(ontology.dataVersion).toBe('hp/releases/2025-01-16');
    expect(ontology.licence).toBe('https://hpo.jax.org/app/license');
    expect(resolveTerm(ontology, 'HP:0000057')).toMatchObject({
      via: 'replaced_by',
      term: { id: 'HP:0008665' },
    });
    expect(resolveTerm(ontology, 'HP:0000730')).toMatchObject({ via: 'alt_id', term: { id: 'HP:0001249' } });
    expect(resolveTerm(ontology, 'HP:0000489')).toEqual({ via: 'obsolete', term: null });
    expect(resolveTerm(ontology, 'HP:9999999')).toEqual({ via: 'unknown', term: null });
  });

  it('follows replacements and alt ids, drops what has none (SYNTHETIC annotation rows)', () => {
    const header = hpoaText
      .split('\n')
      .filter((l) => l.startsWith('#') || l.startsWith('database_id'))
      .join('\n');
    // SYNTHETIC rows written for this test: a made-up disease annotated with obsolete/alt ids.
    const row = (term: string, frequency: string) =>
      [
        'OMIM:000001',
        'Synthetic test disease',
        '',
        term,
        'PMID:1',
        'PCS',
        '',
        frequency,
        '',
        '',
        'P',
        'test',
      ].join('\t');
    const synthetic = [
      header,
      row('HP:0000057', '1/4'), // obsolete Clitoromegaly → HP:0008665
      row('HP:0008665', '1/4'), // the replacement itself: pooled with the row above
      row('HP:0000730', ''), // alt_id of HP:0001249
      row('HP:0000489', '3/4'), // obsolete, "consider" only: dropped
      row('HP:9999999', '3/4'), // not in the ontology: dropped
    ].join('\n');
    const { document: doc, report: r } = importHpo(synthetic, oboText);
    expect(doc.links.map((l) => [l.feature, l.probability, l.as_given])).toEqual([
      ['HP:0001249', 0.5, null],
      ['HP:0008665', 0.25, '1/4; 1/4'],
    ]);
    expect(r.terms.viaReplacedBy).toBe(1);
    expect(r.terms.viaAltId).toBe(1);
    expect(r.terms.dropped).toEqual([
      { id: 'HP:0000489', reason: 'obsolete', consider: ['HP:0100886', 'HP:0100887'] },
      { id: 'HP:9999999', reason: 'unknown', consider: [] },
    ]);
    expect(doc.features.find((f) => f.id === 'HP:0008665')?.label_en).toBe(
      ontology.terms.get('HP:0008665')?.name,
    );
  });
});

describe('hpo-import CLI', () => {
  let dir: string;
  const run = async (argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main(argv, {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
    });
    return { code, stdout, stderr };
  };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hpo-import-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a base that loads, and prints what it did', async () => {
    const out = join(dir, 'hpo');
    const { code, stdout, stderr } = await run(['--hpoa', HPOA, '--obo', OBO, '--out', out]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('7 diseases, 40 features, 40 links from 48 annotation rows');
    expect(stdout).toContain('rows of other aspects, not links: I 4, C 1');
    const { knowledgeBase, report: loaded } = await loadKnowledgeBaseOrThrow(out);
    expect(knowledgeBase.conditions).toHaveLength(7);
    expect(loaded.conditions.notScorable).toEqual([]);
    expect(await readFile(join(out, 'links.csv'), 'utf8')).toContain(
      'ORPHA:1401,HP:0002164,0.895,hpo-2025-01-16,,phenotype.hpoa: ORPHA:1401,HP:0040281 Very frequent,',
    );
  });

  it('keeps a curated subset named on the command line or in a file', async () => {
    const list = join(dir, 'diseases.txt');
    await writeFile(list, '# the curated subset\nORPHA:1401\nOMIM:155350 \n');
    const out = join(dir, 'subset');
    const { code, stdout } = await run([
      '--hpoa',
      HPOA,
      '--obo',
      OBO,
      '--out',
      out,
      '--diseases',
      `@${list}`,
      '--id',
      'hpo-subset',
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('2 diseases');
    const { knowledgeBase } = await loadKnowledgeBaseOrThrow(out);
    expect(knowledgeBase.id).toBe('hpo-subset');
    expect(knowledgeBase.conditions.map((c) => c.id)).toEqual(['OMIM:155350', 'ORPHA:1401']);
    const inline = await run([
      '--hpoa',
      HPOA,
      '--obo',
      OBO,
      '--out',
      join(dir, 'one'),
      '--diseases',
      'ORPHA:2056,OMIM:1',
    ]);
    expect(inline.code).toBe(0);
    expect(inline.stdout).toContain('not in the annotations: OMIM:1');
  });

  it('exits 2 with the usage on a usage error, 1 on a missing file or an empty result', async () => {
    const usage = await run(['--hpoa', HPOA]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--hpoa, --obo and --out are required');
    expect(usage.stderr).toContain('usage: hpo-import');
    const missing = await run(['--hpoa', join(dir, 'nope.hpoa'), '--obo', OBO, '--out', join(dir, 'x')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/ENOENT/);
    const none = await run(['--hpoa', HPOA, '--obo', OBO, '--out', join(dir, 'y'), '--diseases', 'OMIM:1']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no disease left to write');
  });
});
