/**
 * HTML built from templates whose every interpolated value is escaped, unless it is already
 * {@link Html} (made by this tag). The console's pages are built only with `markup`, so user text
 * (titles, descriptions, logs, run output, chat) can never become markup.
 */

/** Markup this module produced: interpolated as is. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

/** What a template may interpolate: text and numbers (escaped), markup, lists of them, nothing. */
export type Interpolation = string | number | Html | null | undefined | false | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return (value as readonly Interpolation[]).map(render).join('');
  if (typeof value === 'number') return String(value);
  return escapeHtml(value as string);
}

/** The template tag: `markup\`<td>${task.title}</td>\`` escapes the title. */
export function markup(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}
