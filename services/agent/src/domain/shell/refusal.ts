/**
 * Why the shell policy refused a command. `code` is a stable, bounded identifier (safe to log at
 * info and to count); `message` tells the caller what was wrong and may quote a piece of their own
 * command, so it goes to the caller and to debug logs only.
 */

export type RefusalCode =
  | 'too_long'
  | 'empty'
  | 'control_character'
  | 'invisible_character'
  | 'compatibility_character'
  | 'metacharacter'
  | 'unterminated_quote'
  | 'denylist'
  | 'program_quoted'
  | 'program_path'
  | 'env_assignment'
  | 'program_name'
  | 'lookalike_program'
  | 'program_not_allowed'
  | 'program_never_allowed'
  | 'too_many_arguments'
  | 'argument_too_long'
  | 'absolute_path'
  | 'parent_path'
  | 'denied_option'
  | 'too_many_operands'
  | 'not_a_command'
  | 'untranslatable'
  | 'workdir_outside';

export interface Refusal {
  readonly code: RefusalCode;
  readonly message: string;
}

export type Checked<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly refusal: Refusal };

export function refuse(
  code: RefusalCode,
  message: string,
): { readonly ok: false; readonly refusal: Refusal } {
  return { ok: false, refusal: { code, message } };
}

export function accept<T>(value: T): { readonly ok: true; readonly value: T } {
  return { ok: true, value };
}

/** A short, printable rendering of a piece of the caller's input for a message (never for logs). */
export function quote(text: string, max = 40): string {
  const shown = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(shown);
}
