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

const SUFFIXES: Record<string, [bigint, bigint]> = {
  n: [1n, 1_000_000_000n],
  u: [1n, 1_000_000n],
  m: [1n, 1000n],
  '': [1n, 1n],
  k: [1000n, 1n],
  M: [10n ** 6n, 1n],
  G: [10n ** 9n, 1n],
  T: [10n ** 12n, 1n],
  P: [10n ** 15n, 1n],
  E: [10n ** 18n, 1n],
  Ki: [2n ** 10n, 1n],
  Mi: [2n ** 20n, 1n],
  Gi: [2n ** 30n, 1n],
  Ti: [2n ** 40n, 1n],
  Pi: [2n ** 50n, 1n],
  Ei: [2n ** 60n, 1n],
};

/** A quantity as an exact fraction (numerator, denominator), or undefined when it is not one. */
function fraction(quantity: string): [bigint, bigint] | undefined {
  const match = /^\+?([0-9]*)(?:\.([0-9]*))?(?:([eE])([+-]?[0-9]+)|([a-zA-Z]*))$/.exec(quantity.trim());
  if (match === null) return undefined;
  const [, whole = '', frac = '', e, exp, suffix = ''] = match;
  if (whole === '' && frac === '') return undefined;
  let num = BigInt(`${whole}${frac}` === '' ? '0' : `${whole}${frac}`);
  let den = 10n ** BigInt(frac.length);
  if (e !== undefined) {
    const power = Number(exp);
    if (Math.abs(power) > 30) return undefined;
    if (power >= 0) num *= 10n ** BigInt(power);
    else den *= 10n ** BigInt(-power);
    return [num, den];
  }
  const unit = SUFFIXES[suffix];
  if (unit === undefined) return undefined;
  num *= unit[0];
  den *= unit[1];
  return [num, den];
}

/**
 * Compares two Kubernetes quantities exactly (`1Gi` > `1G`, `1500m` = `1.5`): negative, zero or
 * positive as `a` is less than, equal to or more than `b`; undefined when either is not a quantity.
 */
export function compareQuantities(a: string, b: string): number | undefined {
  const x = fraction(a);
  const y = fraction(b);
  if (x === undefined || y === undefined) return undefined;
  const left = x[0] * y[1];
  const right = y[0] * x[1];
  return left < right ? -1 : left > right ? 1 : 0;
}
