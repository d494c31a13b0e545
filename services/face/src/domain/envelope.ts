/** The face service's response envelope (spec): `success`, `message`, and `data` except on delete. */

export interface Envelope<T> {
  readonly success: true;
  readonly message: string;
  readonly data: T;
}

export function ok<T>(message: string, data: T): Envelope<T> {
  return { success: true, message, data };
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${String(n)} ${n === 1 ? one : many}`;
}

/** Milliseconds rounded to 0.01, as the spec's float `processing_time_ms`. */
export function ms(value: number): number {
  return Math.round(value * 100) / 100;
}
