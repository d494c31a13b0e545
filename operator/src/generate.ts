/**
 * Writes what is generated from the API's zod schema: `crds/clinicalsuite.ai_clinicalsuites.yaml`.
 * `npm run generate` runs it; `test/operator/api/crd.test.ts` fails when the checked-in file is stale.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { buildCrd } from './api/v1alpha1/crd.js';

export const CRD_FILE = 'crds/clinicalsuite.ai_clinicalsuites.yaml';

export function renderCrd(): string {
  return `# Generated from operator/src/api/v1alpha1 by \`npm run generate\`; do not edit.\n${stringify(buildCrd(), { lineWidth: 0 })}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  writeFileSync(`${root}${CRD_FILE}`, renderCrd());
  process.stdout.write(`wrote ${CRD_FILE}\n`);
}
