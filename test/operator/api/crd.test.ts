import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { buildCrd, toStructural } from '../../../operator/src/api/v1alpha1/crd.js';
import { CHART_CRD_FILE, CRD_FILE, renderCrd } from '../../../operator/src/generate.js';

const REPO = new URL('../../../', import.meta.url);

/** Every node of a schema tree, with its path. */
function* nodes(schema: unknown, path = '$'): Generator<[string, Record<string, unknown>]> {
  if (typeof schema !== 'object' || schema === null) return;
  const node = schema as Record<string, unknown>;
  yield [path, node];
  for (const [name, child] of Object.entries((node['properties'] ?? {}) as Record<string, unknown>)) {
    yield* nodes(child, `${path}.${name}`);
  }
  if (node['items'] !== undefined) yield* nodes(node['items'], `${path}[]`);
  if (typeof node['additionalProperties'] === 'object')
    yield* nodes(node['additionalProperties'], `${path}{}`);
}

describe('the ClinicalSuite CRD', () => {
  it('is checked in as generated from the zod schema (run `npm run generate` when this fails)', () => {
    expect(readFileSync(new URL(CRD_FILE, REPO), 'utf8')).toBe(renderCrd());
    expect(readFileSync(new URL(CHART_CRD_FILE, REPO), 'utf8')).toBe(renderCrd());
  });

  it('is a structural schema: typed nodes, no unions, refs or additionalProperties beside properties', () => {
    const crd = buildCrd() as { spec: { versions: { schema: { openAPIV3Schema: unknown } }[] } };
    const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
    const problems: string[] = [];
    for (const [path, node] of nodes(root)) {
      if (node['type'] === undefined && node['x-kubernetes-preserve-unknown-fields'] !== true) {
        problems.push(`${path}: no type`);
      }
      for (const key of ['anyOf', 'oneOf', 'allOf', 'not', '$ref', '$defs', 'const', '$schema']) {
        if (key in node) problems.push(`${path}: ${key}`);
      }
      if (node['properties'] !== undefined && node['additionalProperties'] !== undefined) {
        problems.push(`${path}: additionalProperties beside properties`);
      }
      if (typeof node['exclusiveMinimum'] === 'number') problems.push(`${path}: numeric exclusiveMinimum`);
    }
    expect(problems).toEqual([]);
  });

  it('carries defaults, enums, minimums and the CEL rules of the zod schema', () => {
    const text = renderCrd();
    expect(text).toContain('x-kubernetes-validations');
    const crd = buildCrd() as {
      spec: {
        versions: { schema: { openAPIV3Schema: { properties: { spec: Record<string, unknown> } } } }[];
      };
    };
    const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec as {
      properties: {
        services: { properties: Record<string, { properties: Record<string, Record<string, unknown>> }> };
      };
    };
    const llm = spec.properties.services.properties['llm']!.properties;
    expect(llm['replicas']).toMatchObject({ type: 'integer', minimum: 0, default: 1 });
    expect(llm['concurrency']).toMatchObject({ type: 'integer', minimum: 1, maximum: 1024 });
    expect(llm['enabled']).toMatchObject({ type: 'boolean', default: false });
  });

  it('converts JSON Schema 2020-12 constructs to their OpenAPI v3.0 forms', () => {
    expect(
      toStructural({
        $schema: 'x',
        type: 'object',
        additionalProperties: false,
        properties: {
          a: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'maybe' },
          b: { type: 'integer', minimum: -9007199254740991, exclusiveMinimum: 0 },
          c: { const: 'x' },
          d: { type: 'string', format: 'regex' },
          m: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: 'string' } },
        },
      }),
    ).toEqual({
      type: 'object',
      properties: {
        a: { type: 'string', nullable: true, description: 'maybe' },
        b: { type: 'integer', minimum: 0, exclusiveMinimum: true },
        c: { enum: ['x'] },
        d: { type: 'string' },
        m: { type: 'object', additionalProperties: { type: 'string' } },
      },
    });
  });
});
