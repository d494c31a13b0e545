/**
 * Bearer auth is on in every service unless its `env` sets AUTH_DISABLED to true (README.md,
 * "Security"). Both runners say so when a suite turns it off: the operator as a Warning event on
 * the suite, the local runner when it starts. The llm and the agent refuse to start with it (the
 * spec fixes their auth), which the message says too.
 */
import { COMPONENTS, type ComponentKey, type Suite } from '../api/v1alpha1/index.js';

/** Components whose service refuses AUTH_DISABLED (services' serviceAuth `alwaysOn`). */
const AUTH_FIXED_BY_SPEC: ReadonlySet<ComponentKey> = new Set(['llm', 'agent']);

const TRUE_VALUES = new Set(['1', 'true', 'yes', 'on']);

/** The warning for component `key`, or null when its auth is on (or left to a Secret's value). */
export function authDisabledWarning(suite: Suite, key: ComponentKey): string | null {
  const entry = suite.spec.services[key]?.env.find((e) => e.name === 'AUTH_DISABLED');
  const value = entry?.value;
  if (value === undefined || !TRUE_VALUES.has(value.trim().toLowerCase())) return null;
  const token = COMPONENTS[key].tokenEnv[0] ?? 'a token';
  if (AUTH_FIXED_BY_SPEC.has(key))
    return `${key}: AUTH_DISABLED=true is refused by this service (the spec fixes its auth), so it will not start; remove it`;
  return (
    `${key}: AUTH_DISABLED=true turns its bearer auth off: anyone who can reach it can call every route ` +
    `(clinical data included); remove it to require ${token}`
  );
}
