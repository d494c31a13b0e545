// The shipped primary-care base merged with an HPO import the size of the whole release, as the
// service does by default when $MODELS_DIR/reasoning/hpo-kb holds one: the merged priors must leave
// mass for "none of the above", and a per-disease prior large enough to use it all up is refused
// (the service would never become ready). The import here is the real importer on the real
// excerpt's rows, copied under as many disease ids as the release holds.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import {
  HPO_UNIFORM_PRIOR,
  importHpo,
  loadKnowledgeBase,
  mergeKnowledgeBases,
  validateKb,
} from '../../services/reasoning/src/kb/index.js';

const PRIMARY_CARE = fileURLToPath(new URL('../../services/reasoning/kb/primary-care/', import.meta.url));
const FIXTURES = new URL('./kb-fixtures/hpo/', import.meta.url);
/** Diseases with phenotype annotations in the 2025-01-16 release, as the importer keeps them. */
const RELEASE_DISEASES = 12_680;

/** The excerpt's phenotype rows of one disease, repeated under `count` new OMIM ids. */
function releaseSizedHpoa(count: number): string {
  const lines = readFileSync(new URL('phenotype-excerpt.hpoa', FIXTURES), 'utf8').split('\n');
  const header = lines.filter((l) => l.startsWith('#') || l.startsWith('database_id'));
  const rows = lines.filter((l) => l.startsWith('OMIM:618112\t') && l.split('\t')[10] === 'P');
  expect(rows.length).toBeGreaterThanOrEqual(2);
  const out = [...header];
  for (let i = 0; i < count; i++) {
    const id = `OMIM:${String(700_000 + i)}`;
    for (const row of rows) out.push(row.replace(/^OMIM:618112\t[^\t]*/, `${id}\tDisease ${String(i)}`));
  }
  return `${out.join('\n')}\n`;
}

describe('the primary-care base merged with a release-sized HPO import', () => {
  const obo = readFileSync(new URL('hp-excerpt.obo', FIXTURES), 'utf8');

  async function merge(prior?: number) {
    const hpo = importHpo(releaseSizedHpoa(RELEASE_DISEASES), obo);
    const document =
      prior === undefined
        ? hpo.document
        : { ...hpo.document, conditions: hpo.document.conditions.map((c) => ({ ...c, prior })) };
    const hpoBase = validateKb(document);
    const primary = await loadKnowledgeBase(PRIMARY_CARE);
    if (!hpoBase.ok || !primary.ok) throw new Error('a base does not load');
    expect(hpoBase.knowledgeBase.conditions).toHaveLength(RELEASE_DISEASES);
    const merged = mergeKnowledgeBases([
      { label: 'primary-care', knowledgeBase: primary.knowledgeBase },
      { label: 'hpo-kb', knowledgeBase: hpoBase.knowledgeBase },
    ]);
    return { merged, primarySum: primary.report.priorSum };
  }

  it('merges, the priors summing below 1 with mass left for "none of the above"', async () => {
    const { merged, primarySum } = await merge();
    expect(merged.problems).toEqual([]);
    if (!merged.ok) return;
    const sum = merged.knowledgeBase.conditions.reduce((s, c) => s + c.prior, 0);
    expect(sum).toBeCloseTo(primarySum + RELEASE_DISEASES * HPO_UNIFORM_PRIOR, 9);
    expect(sum).toBeLessThan(0.99);
  }, 60_000);

  it('is refused, naming the prior sum, when the per-disease prior uses up the mass left', async () => {
    const primary = await loadKnowledgeBase(PRIMARY_CARE);
    if (!primary.ok) throw new Error('the primary-care base does not load');
    const { merged } = await merge((1 - primary.report.priorSum) / RELEASE_DISEASES + 1e-6);
    expect(merged.ok).toBe(false);
    expect(merged.problems.map((p) => p.code)).toContain('prior-sum');
  }, 60_000);
});
