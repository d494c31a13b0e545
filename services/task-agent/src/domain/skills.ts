import { z } from 'zod';
import type { SkillEntry } from './types.js';

/**
 * Skills: named tools a run may call, each with a zod-described input. The LLM sees each skill's
 * name, description and input as JSON Schema; its step is constrained by a grammar built from the
 * same schemas (so it always names a real skill with well-formed input), and the input is parsed
 * again with zod before the skill runs.
 */

export interface SkillContext {
  /** Aborted when the run is cancelled, times out or loses its lease. */
  readonly signal: AbortSignal;
  /** The run's clock (epoch ms). */
  readonly now: () => number;
}

export interface Skill<I = unknown> {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<I>;
  /** The suite service it calls (`codeSearch`, `reasoning`, `llm`...), or null. */
  readonly service: string | null;
  /** The observation the LLM reads next: plain text. Throws on failure (the run logs it and goes on). */
  run(input: I, ctx: SkillContext): Promise<string>;
}

/** A skill of any input type, for lists. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnySkill = Skill<any>;

/** Names skills may take: the LLM writes them, logs and metrics carry them. */
export const SKILL_NAME = /^[a-z][a-z0-9_]{1,47}$/;
/** The action that ends a run with an answer. Not a skill name. */
export const FINISH = 'finish';

const GRAMMAR_KEYS = new Set([
  'type',
  'properties',
  'required',
  'enum',
  'const',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'description',
  'oneOf',
]);

/**
 * A skill input's JSON Schema in the subset the LLM's grammar understands: every property
 * required, no extra properties, numeric bounds left to zod (the grammar cannot bound them).
 */
export function grammarSchema(schema: z.ZodType): Record<string, unknown> {
  return sanitize(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as Record<string, unknown>;
}

function sanitize(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(sanitize);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (!GRAMMAR_KEYS.has(key)) continue;
    if (key === 'properties') {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, sanitize(v)]),
      );
    } else out[key] = sanitize(value);
  }
  if (out['type'] === 'object' && out['properties'] !== undefined) {
    out['required'] = Object.keys(out['properties'] as object);
    out['additionalProperties'] = false;
  }
  return out;
}

/** The catalogue entry (`get_skills`): name, description, documented input, service. */
export function skillEntry(skill: AnySkill): SkillEntry {
  const schema = z.toJSONSchema(skill.input, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete schema['$schema'];
  return { name: skill.name, description: skill.description, input_schema: schema, service: skill.service };
}

/** Checks a catalogue: valid, unique names, none called `finish`. */
export function validateSkills(skills: readonly AnySkill[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const s of skills) {
    if (!SKILL_NAME.test(s.name)) problems.push(`skill name "${s.name}" must match ${SKILL_NAME.source}`);
    if (s.name === FINISH) problems.push(`"${FINISH}" is reserved for the final answer`);
    if (seen.has(s.name)) problems.push(`skill "${s.name}" is defined twice`);
    seen.add(s.name);
  }
  return problems;
}
