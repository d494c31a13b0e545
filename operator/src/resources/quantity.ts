/**
 * Multiplying Kubernetes quantities exactly (`500m` × 3 = `1500m`, `1.5Gi` × 2 = `3Gi`): decimal
 * digits as a bigint and a scale, never floating point, so the result is the same string every time.
 */
import { QUANTITY } from '../api/v1alpha1/patterns.js';

export function multiplyQuantity(quantity: string, factor: number): string {
  const match = /^([0-9]+)(?:\.([0-9]+))?([a-zA-Z]*)$/.exec(quantity);
  if (!QUANTITY.test(quantity) || match === null) throw new Error(`not a quantity: ${quantity}`);
  if (!Number.isSafeInteger(factor) || factor < 0) throw new Error(`not a count: ${factor}`);
  const [, whole = '0', fraction = '', suffix = ''] = match;
  const digits = (BigInt(whole + fraction) * BigInt(factor)).toString().padStart(fraction.length + 1, '0');
  const cut = digits.length - fraction.length;
  const int = digits.slice(0, cut);
  const frac = digits.slice(cut).replace(/0+$/, '');
  return `${int}${frac === '' ? '' : `.${frac}`}${suffix}`;
}
