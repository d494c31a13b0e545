/**
 * Writes what is generated or copied into place: the CRD from the API's zod schema, into `crds/`
 * and into the Helm chart's `crds/`; the env warnings' admission policy into the chart's
 * `admission/` (plan/env-warnings-policy.ts); the Grafana dashboards (`dashboards/*.json`) and the alert
 * rules (`dashboards/alerts/*.rules.yaml`) into the chart (`dashboards/`, `alerts/`), where its
 * templates read them. `npm run generate` runs it; `test/operator/api/crd.test.ts` and
 * `test/observability/dashboards.test.ts` fail when a checked-in copy is stale.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { buildCrd } from './api/v1alpha1/crd.js';
import { buildEnvWarningsPolicySpec } from './plan/env-warnings-policy.js';

export const CRD_FILE = 'crds/clinicalsuite.ai_clinicalsuites.yaml';
export const CHART_CRD_FILE = 'helm/clinical-suite/crds/clinicalsuite.ai_clinicalsuites.yaml';
export const CHART_ENV_WARNINGS_FILE = 'helm/clinical-suite/admission/env-warnings.yaml';

/** Source folder → the chart folder its files are copied to, and which files. */
export const CHART_COPIES = [
  { from: 'dashboards', to: 'helm/clinical-suite/dashboards', pattern: /\.json$/ },
  { from: 'dashboards/alerts', to: 'helm/clinical-suite/alerts', pattern: /\.rules\.yaml$/ },
] as const;

export function renderCrd(): string {
  return `# Generated from operator/src/api/v1alpha1 by \`npm run generate\`; do not edit.\n${stringify(buildCrd(), { lineWidth: 0 })}`;
}

/** The spec of the chart's ValidatingAdmissionPolicy for env variables nothing reads. */
export function renderEnvWarningsPolicy(): string {
  return (
    '# Generated from operator/src/plan by `npm run generate`; do not edit.\n' +
    '# The spec of the ValidatingAdmissionPolicy of templates/env-warnings.yaml.\n' +
    stringify(buildEnvWarningsPolicySpec(), { lineWidth: 0 })
  );
}

/** The files the chart should hold, `to` path → content, copied byte for byte from the sources. */
export function chartCopies(root: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const { from, to, pattern } of CHART_COPIES) {
    for (const name of readdirSync(`${root}${from}`)
      .filter((n) => pattern.test(n))
      .sort())
      out.set(`${to}/${name}`, readFileSync(`${root}${from}/${name}`, 'utf8'));
  }
  return out;
}

/** Rewrites the chart's copies; a file whose source is gone is removed. */
export function syncChartCopies(root: string): string[] {
  const copies = chartCopies(root);
  for (const { to, pattern } of CHART_COPIES) {
    mkdirSync(`${root}${to}`, { recursive: true });
    for (const name of readdirSync(`${root}${to}`).filter((n) => pattern.test(n)))
      if (!copies.has(`${to}/${name}`)) rmSync(`${root}${to}/${name}`);
  }
  for (const [file, text] of copies) writeFileSync(`${root}${file}`, text);
  return [...copies.keys()];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  for (const file of [CRD_FILE, CHART_CRD_FILE]) {
    writeFileSync(`${root}${file}`, renderCrd());
    process.stdout.write(`wrote ${file}\n`);
  }
  mkdirSync(`${root}helm/clinical-suite/admission`, { recursive: true });
  writeFileSync(`${root}${CHART_ENV_WARNINGS_FILE}`, renderEnvWarningsPolicy());
  process.stdout.write(`wrote ${CHART_ENV_WARNINGS_FILE}\n`);
  for (const file of syncChartCopies(root)) process.stdout.write(`copied ${file}\n`);
}
