/**
 * Names of generated objects: `<suite>-<component dir>[-<suffix>]`, at most 63 characters (a DNS
 * label, what Services and label values allow). A longer name is cut and given a short hash of the
 * whole name, so it stays stable across reconciles and two long names never collide.
 */
import { createHash } from 'node:crypto';
import { COMPONENTS, type ComponentKey } from '../api/v1alpha1/index.js';

export const MAX_NAME_LENGTH = 63;
const HASH_LENGTH = 8;

/** Joins `parts` with "-"; cuts past 63 characters, appending `-<8 hex of sha256(full name)>`. */
export function boundedName(...parts: readonly string[]): string {
  const full = parts.join('-');
  if (full.length <= MAX_NAME_LENGTH) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, HASH_LENGTH);
  // A DNS label ends with a letter or digit: drop the "-" (or ".") the cut may leave.
  const head = full.slice(0, MAX_NAME_LENGTH - HASH_LENGTH - 1).replace(/[-.]+$/, '');
  return `${head}-${hash}`;
}

type Named = { readonly metadata: { readonly name: string } };

/** The name of a component's objects: `<suite>-<dir>`, or `<suite>-<dir>-<suffix>` (e.g. `models`). */
export function objectName(suite: Named, component: ComponentKey, suffix?: string): string {
  const parts = [suite.metadata.name, COMPONENTS[component].dir];
  return boundedName(...(suffix === undefined ? parts : [...parts, suffix]));
}

/** The name of a suite-wide object, e.g. the generated auth Secret `<suite>-auth`. */
export function suiteObjectName(suite: Named, suffix: string): string {
  return boundedName(suite.metadata.name, suffix);
}
