/** Parsing a ClinicalSuite with errors a person can act on: one line per failing field. */
import type { z } from 'zod';
import { ClinicalSuiteSchema, type ClinicalSuite } from './suite.js';

export interface FieldIssue {
  /** Dotted path, e.g. `spec.services.llm.concurrency` or `spec.services.agent.dependsOn[1]`. */
  readonly path: string;
  readonly message: string;
}

export class SuiteValidationError extends Error {
  override readonly name = 'SuiteValidationError';
  constructor(readonly issues: readonly FieldIssue[]) {
    super(['invalid ClinicalSuite:', ...issues.map((i) => `  ${i.path}: ${i.message}`)].join('\n'));
  }
}

/** `['spec', 'services', 'llm', 'env', 0, 'name']` → `spec.services.llm.env[0].name`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(segment))
      out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out || '(root)';
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

const article = (word: string): string => `${/^[aeiou]/.test(word) ? 'an' : 'a'} ${word}`;

const plural = (n: number | bigint, word: string): string => `${n} ${word}${n === 1 || n === 1n ? '' : 's'}`;

/** Default wording for the issues a schema gives no message of its own (a per-parse error map). */
function describeIssue(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'required';
      return `must be ${article(issue.expected === 'int' ? 'integer' : issue.expected)}, got ${typeOf(issue.input)}`;
    case 'too_small': {
      const op = issue.inclusive === false ? '>' : '>=';
      if (issue.origin === 'array') return `must have at least ${plural(issue.minimum, 'item')}`;
      if (issue.origin === 'string') return `must be at least ${plural(issue.minimum, 'character')} long`;
      return `must be ${op} ${issue.minimum}`;
    }
    case 'too_big': {
      const op = issue.inclusive === false ? '<' : '<=';
      if (issue.origin === 'array') return `must have at most ${plural(issue.maximum, 'item')}`;
      if (issue.origin === 'string') return `must be at most ${plural(issue.maximum, 'character')} long`;
      return `must be ${op} ${issue.maximum}`;
    }
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of: ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'regex' && issue.pattern
        ? `must match ${issue.pattern.replace(/^\/|\/$/g, '')}`
        : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    default:
      return undefined;
  }
}

/** Every problem of `input` as a ClinicalSuite, or an empty list. */
export function suiteIssues(input: unknown): FieldIssue[] {
  const result = ClinicalSuiteSchema.safeParse(input, { error: describeIssue });
  return result.success ? [] : toFieldIssues(result.error.issues);
}

function toFieldIssues(issues: readonly z.core.$ZodIssue[]): FieldIssue[] {
  return issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: formatPath([...issue.path, key]), message: 'unknown field' }))
      : [{ path: formatPath(issue.path), message: issue.message }],
  );
}

/** Parses and defaults a ClinicalSuite; throws a {@link SuiteValidationError} listing every failing field. */
export function parseSuite(input: unknown): ClinicalSuite {
  const result = ClinicalSuiteSchema.safeParse(input, { error: describeIssue });
  if (!result.success) throw new SuiteValidationError(toFieldIssues(result.error.issues));
  return result.data;
}
