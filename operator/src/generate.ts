/**
 * Writes what is generated from the API's zod schema: the CRD, into `crds/` and into the Helm
 * chart's `crds/`. `npm run generate` runs it; `test/operator/api/crd.test.ts` fails when a
 * checked-in copy is stale.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { buildCrd } from './api/v1alpha1/crd.js';

export const CRD_FILE = 'crds/clinicalsuite.ai_clinicalsuites.yaml';
export const CHART_CRD_FILE = 'helm/clinical-suite/crds/clinicalsuite.ai_clinicalsuites.yaml';

export function renderCrd(): string {
  return `# Generated from operator/src/api/v1alpha1 by \`npm run generate\`; do not edit.\n${stringify(buildCrd(), { lineWidth: 0 })}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  for (const file of [CRD_FILE, CHART_CRD_FILE]) {
    writeFileSync(`${root}${file}`, renderCrd());
    process.stdout.write(`wrote ${file}\n`);
  }
}
