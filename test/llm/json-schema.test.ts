import { describe, expect, it } from '@jest/globals';
import { getLlama } from 'node-llama-cpp';
import { grammarSchema, UnsupportedSchemaError } from '../../services/llm/src/domain/json-schema.js';

// The response_format schema as node-llama-cpp's converter will read it: every keyword enforced,
// rewritten to the same meaning, or refused. (The converter silently ignored the rest: a pattern
// gave any string, an anyOf or an empty schema gave `null`.)

const problems = (schema: unknown): readonly string[] => {
  try {
    grammarSchema(schema);
  } catch (error) {
    if (error instanceof UnsupportedSchemaError) return error.problems;
    throw error;
  }
  return [];
};

describe('grammarSchema', () => {
  it('passes the converter’s own keywords through unchanged', () => {
    const schema = {
      type: 'object',
      description: 'triage',
      properties: {
        urgency: { enum: ['emergency', 'urgent', 'routine'] },
        admit: { type: 'boolean' },
        notes: { type: 'string', minLength: 1, maxLength: 200 },
        when: { type: 'string', format: 'date-time' },
        codes: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
        pair: { type: 'array', prefixItems: [{ type: 'integer' }, { const: 'mmHg' }] },
        either: { oneOf: [{ type: 'number' }, { type: ['string', 'null'] }] },
      },
      required: ['urgency', 'admit'],
      additionalProperties: false,
      minProperties: 2,
    };
    expect(grammarSchema(schema)).toEqual(schema);
  });

  it('rewrites anyOf, definitions, a type list with object, and an empty schema to what the converter reads', () => {
    expect(
      grammarSchema({
        $schema: 'http://json-schema.org/draft-07/schema#',
        title: 'Answer',
        type: 'object',
        properties: {
          code: { anyOf: [{ $ref: '#/definitions/code' }, { type: 'null' }], default: null },
          vitals: { type: ['object', 'null'], properties: { hr: { type: 'integer' } }, required: ['hr'] },
          free: {},
        },
        definitions: { code: { type: 'string', enum: ['I21'] } },
      }),
    ).toEqual({
      type: 'object',
      properties: {
        code: { oneOf: [{ $ref: '#/$defs/code' }, { type: 'null' }] },
        vitals: {
          oneOf: [
            { type: 'object', properties: { hr: { type: 'integer' } }, required: ['hr'] },
            { type: 'null' },
          ],
        },
        free: {
          oneOf: [
            { type: ['string', 'number', 'boolean', 'null'] },
            { type: 'object', additionalProperties: true },
            { type: 'array' },
          ],
        },
      },
      $defs: { code: { enum: ['I21'] } },
    });
  });

  it('reads keywords without a type as the one type they belong to', () => {
    expect(grammarSchema({ properties: { a: { type: 'string' } }, required: ['a'] })).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
    });
    expect(grammarSchema({ items: { type: 'integer' }, maxItems: 2 })).toEqual({
      type: 'array',
      items: { type: 'integer' },
      maxItems: 2,
    });
    expect(problems({ properties: {}, items: {} })).toEqual([
      '#: "properties" is not supported here (the grammar could not enforce it)',
      '#: "items" is not supported here (the grammar could not enforce it)',
    ]);
  });

  it('answers `any` for no constraint at the root ({} or true): any JSON object, as json_object', () => {
    expect(grammarSchema({})).toBe('any');
    expect(grammarSchema(true)).toBe('any');
    expect(grammarSchema({ title: 'anything', description: 'free' })).toBe('any');
  });

  it('refuses what the grammar cannot enforce, with each path', () => {
    expect(problems({ type: 'string', pattern: '^a+$' })).toEqual([
      '#: "pattern" is not supported here (the grammar could not enforce it)',
    ]);
    expect(problems({ type: 'foo' })).toEqual([
      '#/type: "foo" is not a JSON schema type (or a list of them)',
    ]);
    expect(
      problems({
        type: 'object',
        properties: {
          age: { type: 'integer', minimum: 0 },
          'a/b': { type: 'string', format: 'email' },
          tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
        },
        required: ['age', 'sex'],
      }),
    ).toEqual([
      '#/properties/age: "minimum" is not supported here (the grammar could not enforce it)',
      '#/properties/a~1b/format: "email" is not supported (date-time, date and time are)',
      '#/properties/tags: "uniqueItems" is not supported here (the grammar could not enforce it)',
      '#/required: "sex" is not in properties',
    ]);
    expect(problems({ allOf: [{ type: 'string' }] })).toEqual([
      '#: "allOf" is not supported here (the grammar could not enforce it)',
    ]);
    expect(problems({ $ref: '#/$defs/missing' })).toEqual([
      '#/$ref: "#/$defs/missing" does not name a schema in the root\'s $defs',
    ]);
    // A malformed escape in the pointer is the client's mistake too, not the service's.
    expect(problems({ $ref: '#/$defs/%E0%A4%A', $defs: { x: { type: 'string' } } })).toEqual([
      '#/$ref: "#/$defs/%E0%A4%A" does not name a schema in the root\'s $defs',
    ]);
    expect(problems({ type: 'object', properties: { a: { $defs: { x: {} }, type: 'string' } } })).toEqual([
      "#/properties/a/$defs: only the root's $defs are supported",
    ]);
    expect(problems(false)).toEqual(['#: a false schema allows no value']);
    expect(problems({ enum: [] })).toEqual(['#/enum: must be a non-empty list']);
    expect(problems({ enum: [{ a: 1 }] })).toEqual([
      '#/enum: only strings, numbers, booleans and null are supported',
    ]);
    expect(problems({ type: 'string', maxLength: -1 })).toEqual([
      '#/maxLength: must be a whole number of at least 0',
    ]);
  });

  it('lists at most five problems', () => {
    const properties = Object.fromEntries(
      Array.from({ length: 8 }, (_, i) => [`p${i}`, { type: 'string', pattern: 'x' }]),
    );
    expect(problems({ type: 'object', properties })).toHaveLength(5);
  });

  it('gives node-llama-cpp schemas it converts without a warning', async () => {
    const warn = captureWarnings();
    const schema = grammarSchema({
      type: 'object',
      properties: { a: { $ref: '#/definitions/x' }, b: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
      definitions: { x: { type: 'string', maxLength: 3 } },
    });
    const llama = await getLlama({ gpu: false, maxThreads: 1 });
    try {
      const grammar = await llama.createGrammarForJsonSchema(
        schema as Parameters<typeof llama.createGrammarForJsonSchema>[0],
      );
      expect(grammar.grammar).toContain('string-0-3-rule');
      expect(grammar.grammar).not.toContain('any-json');
      expect(warn.calls).toEqual([]);
    } finally {
      warn.restore();
      await llama.dispose();
    }
  });
});

/** Records console.warn calls (node-llama-cpp warns there about references it cannot resolve). */
function captureWarnings(): { calls: unknown[][]; restore: () => void } {
  const original = console.warn;
  const calls: unknown[][] = [];
  console.warn = (...args: unknown[]) => {
    calls.push(args);
  };
  return { calls, restore: () => (console.warn = original) };
}
