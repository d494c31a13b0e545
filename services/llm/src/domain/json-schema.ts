/**
 * A request's `response_format` JSON schema, checked and rewritten into the subset node-llama-cpp's
 * grammar converter enforces. Pure.
 *
 * The converter reads what it knows and quietly ignores the rest: `{type: "string", pattern: …}`
 * became any string, an unknown type or an `anyOf` became `null`, an empty schema `null` too, and a
 * `#/definitions/…` reference any value (with a plain-text warning on stdout). A reply that breaks
 * the schema the client sent is a made-up guarantee, so every keyword is either enforced or
 * refused (400 naming its path):
 * - enforced as is: `type` (one, or a list), `enum`, `const`, `oneOf`, `properties`, `required`,
 *   `additionalProperties`, `minProperties`/`maxProperties`, `items`, `prefixItems`,
 *   `minItems`/`maxItems`, `minLength`/`maxLength`, `format` `date-time`/`date`/`time`, `$ref` to
 *   the root's `$defs`;
 * - rewritten to what the converter reads, with the same meaning for a generated reply: `anyOf` as
 *   `oneOf` (a value the grammar produces matches one alternative, so it matches any of them),
 *   `definitions` and `#/definitions/…` as `$defs`, a type list holding `object` or `array` as a
 *   `oneOf` of one schema per type, keywords without a `type` (`{properties: …}`) as the one type
 *   they belong to, and an empty schema (`{}`, `true`) as any JSON value;
 * - annotations are dropped (`title`, `$schema`, `$id`, `$comment`, `examples`, `default`,
 *   `deprecated`, `readOnly`, `writeOnly`); `description` is kept.
 * Anything else (`pattern`, `minimum`, `multipleOf`, `uniqueItems`, `allOf`, `not`, other formats…)
 * is refused.
 */

/** The rewritten schema, or `'any'`: no constraint at the root (any JSON object, as `json_object`). */
export type GrammarSchema = Readonly<Record<string, unknown>> | 'any';

export class UnsupportedSchemaError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('; '));
  }
}

const ANNOTATIONS = new Set([
  'title',
  '$schema',
  '$id',
  '$comment',
  'examples',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
]);
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);
const TYPES = new Set([...SCALAR_TYPES, 'object', 'array']);
/** The keywords each type may carry besides `type` and `description`. */
const TYPE_KEYWORDS: Readonly<Record<string, ReadonlySet<string>>> = {
  string: new Set(['minLength', 'maxLength', 'format']),
  number: new Set(),
  integer: new Set(),
  boolean: new Set(),
  null: new Set(),
  object: new Set(['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties']),
  array: new Set(['items', 'prefixItems', 'minItems', 'maxItems']),
};
const FORMATS = new Set(['date-time', 'date', 'time']);
const MAX_PROBLEMS = 5;

/** Any JSON value, in the converter's terms. */
const ANY_VALUE: Readonly<Record<string, unknown>> = {
  oneOf: [
    { type: ['string', 'number', 'boolean', 'null'] },
    { type: 'object', additionalProperties: true },
    { type: 'array' },
  ],
};

type Node = Readonly<Record<string, unknown>>;

/** Checks and rewrites a request's schema; throws `UnsupportedSchemaError` listing what cannot be enforced. */
export function grammarSchema(schema: unknown): GrammarSchema {
  const problems: string[] = [];
  const root = isObject(schema) ? schema : undefined;
  const defsOf = (node: Node): Node | undefined => {
    const hasDefs = node['$defs'] !== undefined;
    const hasDefinitions = node['definitions'] !== undefined;
    if (hasDefs && hasDefinitions) problems.push('#: use $defs or definitions, not both');
    const defs = hasDefs ? node['$defs'] : node['definitions'];
    if (defs === undefined) return undefined;
    if (!isObject(defs)) {
      problems.push(`#/${hasDefs ? '$defs' : 'definitions'}: must be an object of schemas`);
      return undefined;
    }
    return defs;
  };
  const rootDefs = root === undefined ? undefined : defsOf(root);

  const convert = (node: unknown, path: string): Node => {
    if (node === true) return ANY_VALUE;
    if (!isObject(node)) {
      problems.push(
        `${path}: ${node === false ? 'a false schema allows no value' : 'must be a schema object'}`,
      );
      return ANY_VALUE;
    }
    const description = typeof node['description'] === 'string' ? { description: node['description'] } : {};
    const keys = Object.keys(node).filter(
      (k) =>
        !ANNOTATIONS.has(k) &&
        k !== 'description' &&
        !(path === '#' && (k === '$defs' || k === 'definitions')),
    );
    const refuse = (allowed: ReadonlySet<string>): void => {
      for (const key of keys) {
        if (allowed.has(key)) continue;
        problems.push(
          key === '$defs' || key === 'definitions'
            ? `${path}/${key}: only the root's ${key} are supported`
            : `${path}: "${key}" is not supported here (the grammar could not enforce it)`,
        );
      }
    };

    if (keys.includes('$ref')) {
      refuse(new Set(['$ref']));
      const ref = node['$ref'];
      const name = typeof ref === 'string' ? /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref)?.[1] : undefined;
      const key = name === undefined ? undefined : decodePointer(name);
      if (key === undefined || rootDefs?.[key] === undefined) {
        problems.push(`${path}/$ref: ${JSON.stringify(ref)} does not name a schema in the root's $defs`);
        return ANY_VALUE;
      }
      return { $ref: `#/$defs/${key}`, ...description };
    }
    if (keys.includes('const') || keys.includes('enum')) {
      const which = keys.includes('const') ? 'const' : 'enum';
      refuse(new Set([which, 'type']));
      const values = which === 'const' ? [node['const']] : node['enum'];
      if (!Array.isArray(values) || values.length === 0) {
        problems.push(`${path}/enum: must be a non-empty list`);
      } else if (!values.every(isScalar)) {
        problems.push(`${path}/${which}: only strings, numbers, booleans and null are supported`);
      }
      return { [which]: node[which], ...description };
    }
    const union = keys.includes('oneOf') ? 'oneOf' : keys.includes('anyOf') ? 'anyOf' : undefined;
    if (union !== undefined) {
      refuse(new Set([union]));
      const alternatives = node[union];
      if (!Array.isArray(alternatives) || alternatives.length === 0) {
        problems.push(`${path}/${union}: must be a non-empty list of schemas`);
        return ANY_VALUE;
      }
      return { oneOf: alternatives.map((a, i) => convert(a, `${path}/${union}/${i}`)), ...description };
    }
    if (!keys.includes('type')) {
      if (keys.length === 0) return ANY_VALUE; // no constraint: any value
      // `{properties: …}` without a type: the one type whose keywords these are (a value of that
      // type satisfies the schema); keywords of no single type are refused.
      const inferred = Object.keys(TYPE_KEYWORDS).filter((t) => keys.every((k) => TYPE_KEYWORDS[t]?.has(k)));
      if (inferred.length !== 1) {
        refuse(new Set());
        return ANY_VALUE;
      }
      return { ...convertTyped(node, inferred[0] as string, path), ...description };
    }
    const type = node['type'];
    const types = Array.isArray(type) ? type : [type];
    if (types.length === 0 || !types.every((t): t is string => typeof t === 'string' && TYPES.has(t))) {
      problems.push(`${path}/type: ${JSON.stringify(type)} is not a JSON schema type (or a list of them)`);
      return ANY_VALUE;
    }
    const allowed = new Set(['type', ...types.flatMap((t) => [...(TYPE_KEYWORDS[t] ?? [])])]);
    refuse(allowed);
    if (types.length > 1) {
      if (types.every((t) => SCALAR_TYPES.has(t)) && keys.every((k) => k === 'type')) {
        return { type: types, ...description };
      }
      // One schema per type, each with the keywords of its type.
      return {
        oneOf: types.map((t) =>
          convertTyped(
            Object.fromEntries(Object.entries(node).filter(([k]) => TYPE_KEYWORDS[t]?.has(k) ?? false)),
            t,
            path,
          ),
        ),
        ...description,
      };
    }
    return { ...convertTyped(node, types[0] as string, path), ...description };
  };

  const convertTyped = (node: Node, type: string, path: string): Node => {
    const out: Record<string, unknown> = { type };
    const count = (key: string): void => {
      const value = node[key];
      if (value === undefined) return;
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0) out[key] = value;
      else problems.push(`${path}/${key}: must be a whole number of at least 0`);
    };
    switch (type) {
      case 'string': {
        const format = node['format'];
        if (format !== undefined) {
          if (typeof format !== 'string' || !FORMATS.has(format)) {
            problems.push(
              `${path}/format: ${JSON.stringify(format)} is not supported (date-time, date and time are)`,
            );
          } else if (node['minLength'] !== undefined || node['maxLength'] !== undefined) {
            problems.push(`${path}: format with minLength or maxLength is not supported`);
          } else {
            out['format'] = format;
          }
          return out;
        }
        count('minLength');
        count('maxLength');
        return out;
      }
      case 'object': {
        const properties = node['properties'];
        if (properties !== undefined) {
          if (!isObject(properties)) problems.push(`${path}/properties: must be an object of schemas`);
          else
            out['properties'] = Object.fromEntries(
              Object.entries(properties).map(([k, v]) => [
                k,
                convert(v, `${path}/properties/${escapePointer(k)}`),
              ]),
            );
        }
        const required = node['required'];
        if (required !== undefined) {
          if (!Array.isArray(required) || !required.every((r) => typeof r === 'string'))
            problems.push(`${path}/required: must be a list of property names`);
          else {
            // The grammar writes only the properties it knows: a required one it does not know would be missing.
            for (const name of required.filter((r) => !isObject(properties) || !(r in properties)))
              problems.push(`${path}/required: "${name}" is not in properties`);
            out['required'] = required;
          }
        }
        const additional = node['additionalProperties'];
        if (additional !== undefined) {
          out['additionalProperties'] =
            typeof additional === 'boolean'
              ? additional
              : convert(additional, `${path}/additionalProperties`);
        }
        count('minProperties');
        count('maxProperties');
        return out;
      }
      case 'array': {
        if (node['items'] !== undefined) out['items'] = convert(node['items'], `${path}/items`);
        const prefix = node['prefixItems'];
        if (prefix !== undefined) {
          if (!Array.isArray(prefix)) problems.push(`${path}/prefixItems: must be a list of schemas`);
          else out['prefixItems'] = prefix.map((p, i) => convert(p, `${path}/prefixItems/${i}`));
        }
        count('minItems');
        count('maxItems');
        return out;
      }
      default:
        return out;
    }
  };

  if (root === undefined && schema !== true) {
    convert(schema, '#');
    throw new UnsupportedSchemaError(problems.slice(0, MAX_PROBLEMS));
  }
  const converted = convert(schema, '#');
  const defs =
    rootDefs === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries(rootDefs).map(([k, v]) => [k, convert(v, `#/$defs/${escapePointer(k)}`)]),
        );
  if (problems.length > 0) throw new UnsupportedSchemaError(problems.slice(0, MAX_PROBLEMS));
  if (converted === ANY_VALUE && defs === undefined) return 'any';
  return defs === undefined ? converted : { ...converted, $defs: defs };
}

function isObject(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isScalar(value: unknown): boolean {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

/** A JSON pointer segment of a `$ref` (percent-encoded, then `~1`, `~0`); undefined when malformed. */
function decodePointer(segment: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return undefined;
  }
  return decoded.replace(/~1/g, '/').replace(/~0/g, '~');
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
