/**
 * Golden files: every object the builders render for each sample, compared byte for byte with
 * test/golden/<sample>.yaml. `UPDATE_GOLDEN=1` rewrites them; review the diff like code.
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { buildSuiteObjects, DEFAULT_OPERATOR_CONFIG } from '../../../operator/src/resources/index.js';
import { goldenDir, sample, toYaml } from './fixtures.js';

const SAMPLES = ['minimal-cpu', 'gpu', 'full'] as const;
const update = process.env['UPDATE_GOLDEN'] === '1';

describe.each(SAMPLES)('golden: crds/samples/%s.yaml', (name) => {
  const objects = buildSuiteObjects(sample(name), DEFAULT_OPERATOR_CONFIG);
  const rendered = toYaml(
    objects,
    `Rendered from crds/samples/${name}.yaml by test/operator/resources/golden.test.ts; UPDATE_GOLDEN=1 rewrites it.`,
  );
  const file = `${goldenDir}${name}.yaml`;

  it('matches test/golden', () => {
    if (update) writeFileSync(file, rendered);
    expect(existsSync(file)).toBe(true);
    expect(rendered).toBe(readFileSync(file, 'utf8'));
  });

  it('renders plain data: the YAML reads back as the same objects', () => {
    const docs = parseAllDocuments(rendered).map((d) => d.toJS() as unknown);
    expect(docs).toEqual(JSON.parse(JSON.stringify(objects)));
  });
});
