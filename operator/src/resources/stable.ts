/** Stable orderings: the same input gives the same bytes, so hashes and applied objects never churn. */

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A copy with keys in code-point order. */
export function sorted<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => byCodePoint(a, b)));
}

/** JSON with every object's keys sorted (arrays keep their order); `undefined` members are left out. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? sorted(v as Record<string, unknown>) : v,
  );
}
