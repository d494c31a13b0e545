/**
 * The ClinicalSuite CustomResourceDefinition, generated from the zod schema (the single source of
 * truth). Pure: `buildCrd()` returns the object; `npm run generate` writes it into `crds/` and the
 * Helm chart, and a test fails when the checked-in files differ.
 *
 * zod emits JSON Schema 2020-12; a CRD takes a *structural* OpenAPI v3.0 schema. The conversion:
 * no `$schema`/`additionalProperties: false` beside `properties`, `const` → `enum`, numeric
 * `exclusiveMinimum`/`exclusiveMaximum` → boolean form, nullable unions → `nullable: true`, zod's
 * safe-integer bounds dropped, only formats Kubernetes knows kept, `metadata` left to the server.
 */
import { z } from 'zod';
import { GROUP, KIND, LIST_KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from './constants.js';
import { SuiteSpecSchema } from './spec.js';
import { DNS_1035_LABEL } from './patterns.js';
import { SuiteStatusSchema } from './status.js';
import { MAX_SUITE_NAME_LENGTH, SUITE_NAME_LENGTH_MESSAGE, SUITE_NAME_PATTERN_MESSAGE } from './suite.js';

type Schema = Record<string, unknown>;

const KNOWN_FORMATS = new Set([
  'int32',
  'int64',
  'float',
  'double',
  'byte',
  'date',
  'date-time',
  'uri',
  'email',
]);
const DROPPED_KEYS = new Set(['$schema', 'propertyNames', 'id', '$id', 'examples']);

/** Converts one JSON Schema 2020-12 node (from zod) to a structural OpenAPI v3.0 node. */
export function toStructural(node: unknown): Schema {
  if (typeof node !== 'object' || node === null) return {};
  const input = node as Schema;
  const nullable = nullableUnion(input);
  if (nullable !== undefined) return { ...toStructural(nullable), nullable: true };
  const out: Schema = {};
  for (const [key, value] of Object.entries(input)) {
    if (DROPPED_KEYS.has(key)) continue;
    switch (key) {
      case 'properties':
        out[key] = Object.fromEntries(
          Object.entries(value as Record<string, unknown>).map(([name, child]) => [
            name,
            toStructural(child),
          ]),
        );
        break;
      case 'items':
        out[key] = toStructural(value);
        break;
      case 'additionalProperties':
        // `false` beside `properties` is not structural (unknown fields are pruned anyway); a map's
        // value schema stays.
        if (typeof value === 'object' && value !== null) out[key] = toStructural(value);
        break;
      case 'const':
        out['enum'] = [value];
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        if (typeof value === 'number') {
          out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
          out[key] = true;
        }
        break;
      case 'minimum':
      case 'maximum':
        if (typeof value === 'number' && Math.abs(value) < Number.MAX_SAFE_INTEGER) out[key] = value;
        break;
      case 'format':
        if (typeof value === 'string' && KNOWN_FORMATS.has(value)) out[key] = value;
        break;
      default:
        out[key] = value;
    }
  }
  return out;
}

/** `anyOf: [X, {type: 'null'}]` → X; anything else → undefined. */
function nullableUnion(node: Schema): unknown {
  const anyOf: unknown = node['anyOf'];
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return undefined;
  const isNull = (s: unknown) => typeof s === 'object' && s !== null && (s as Schema)['type'] === 'null';
  const other: unknown = anyOf.find((s) => !isNull(s));
  if (!anyOf.some(isNull) || typeof other !== 'object' || other === null) return undefined;
  return { ...(other as Schema), ...withoutKey(node, 'anyOf') };
}

function withoutKey(node: Schema, key: string): Schema {
  const { [key]: _dropped, ...rest } = node;
  return rest;
}

function structural(schema: z.ZodType): Schema {
  return toStructural(
    z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw', target: 'draft-2020-12' }),
  );
}

export function buildCrd(): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: KIND,
        listKind: LIST_KIND,
        plural: PLURAL,
        singular: SINGULAR,
        shortNames: [...SHORT_NAMES],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Ready',
              type: 'string',
              jsonPath: '.status.conditions[?(@.type=="Ready")].status',
              description: 'Whether every enabled service is ready.',
            },
            {
              name: 'Services',
              type: 'string',
              jsonPath: '.status.ready',
              description: 'Services ready / enabled.',
            },
            {
              name: 'Reason',
              type: 'string',
              jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
              priority: 1,
            },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'A suite of clinical AI services run together on Kubernetes.',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: { ...structural(SuiteSpecSchema), default: {} },
                status: structural(SuiteStatusSchema),
              },
              // The server checks only that metadata.name is a DNS subdomain; Services need more.
              'x-kubernetes-validations': [
                {
                  rule: `self.metadata.name.matches('${DNS_1035_LABEL.source}')`,
                  message: `metadata.name ${SUITE_NAME_PATTERN_MESSAGE}`,
                },
                {
                  rule: `size(self.metadata.name) <= ${MAX_SUITE_NAME_LENGTH}`,
                  message: `metadata.name ${SUITE_NAME_LENGTH_MESSAGE}`,
                },
              ],
            },
          },
        },
      ],
    },
  };
}
