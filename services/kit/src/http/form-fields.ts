import { z } from 'zod';

/**
 * Form fields as HTML forms send them: every field, empty when left blank. A blank value means the
 * field is absent, so its schema's default (or `optional`) applies rather than a refusal or a 0.
 */

/** `undefined` for a blank string, anything else as it is. */
export function blankAsAbsent(value: unknown): unknown {
  return typeof value === 'string' && value.trim() === '' ? undefined : value;
}

/** A form field whose blank value is absent; `schema` is optional or has a default. */
export function formOptional<T extends z.ZodType>(schema: T) {
  return z.preprocess(blankAsAbsent, schema);
}
