import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { COMPONENT_KEYS } from '../../../operator/src/api/v1alpha1/index.js';
import { CHART_ENV_WARNINGS_FILE, renderEnvWarningsPolicy } from '../../../operator/src/generate.js';
import { buildEnvWarningsPolicySpec } from '../../../operator/src/plan/env-warnings-policy.js';
import { readEnvNames } from '../../../operator/src/plan/unread-env.js';

// What the policy decides is checked on a real API server (test/helm/chart.test.ts).

const REPO = new URL('../../../', import.meta.url);

describe('the env warnings admission policy', () => {
  it('is in the chart as npm run generate writes it', () => {
    expect(readFileSync(new URL(CHART_ENV_WARNINGS_FILE, REPO), 'utf8')).toBe(renderEnvWarningsPolicy());
  });

  it('has one warning per component, each knowing every name its service reads', () => {
    const spec = buildEnvWarningsPolicySpec() as {
      variables: { name: string; expression: string }[];
      validations: { expression: string; messageExpression: string }[];
    };
    expect(spec.validations).toHaveLength(COMPONENT_KEYS.length);
    const expressions = spec.variables.map((v) => v.expression).join('\n');
    for (const key of COMPONENT_KEYS)
      for (const name of readEnvNames(key)) expect(expressions).toContain(`'${name}'`);
  });
});
