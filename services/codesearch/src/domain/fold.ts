/**
 * Text folding for search: lowercase, Vietnamese (and other Latin) diacritics removed, đ → d,
 * one output character per input UTF-16 unit so token offsets in the folded text are offsets in
 * the original (highlights point into the title as written).
 */

const cache = new Map<number, string>();

function foldChar(code: number): string {
  const hit = cache.get(code);
  if (hit !== undefined) return hit;
  let out: string;
  const ch = String.fromCharCode(code);
  if (code === 0x0111 || code === 0x0110) out = 'd';
  else if (code < 0x80) out = ch.toLowerCase();
  else {
    const base = ch.normalize('NFD').charAt(0).toLowerCase();
    // A combining mark (decomposed text) stays part of its word and is dropped from the term.
    out = /[\u0300-\u036f]/.test(base) ? '\u0000' : base.length === 1 ? base : ' ';
  }
  if (cache.size < 65_536) cache.set(code, out);
  return out;
}

/** `Tăng Huyết Áp` → `tang huyet ap` (same length as the input). */
export function fold(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) out += foldChar(text.charCodeAt(i));
  return out;
}

export interface Token {
  /** The folded token. */
  readonly term: string;
  readonly start: number;
  readonly end: number;
}

// The NUL is the folded combining mark (see foldChar).
// eslint-disable-next-line no-control-regex
const WORD = /[a-z0-9][a-z0-9\u0000]*/g;

/** Folded word tokens with their offsets in `text` (composed or decomposed, offsets stay exact). */
export function tokenize(text: string): Token[] {
  const folded = fold(text);
  const tokens: Token[] = [];
  for (const m of folded.matchAll(WORD)) {
    tokens.push({ term: m[0].replaceAll('\u0000', ''), start: m.index, end: m.index + m[0].length });
  }
  return tokens;
}

/**
 * A light English plural stemmer, applied alike to titles and queries (Vietnamese syllables never
 * end in `s`): `infections` → `infection`, `allergies` → `allergy`, `abscesses` → `abscess`;
 * `virus`, `abscess`, `psoriasis` stay.
 */
export function stem(term: string): string {
  if (term.length <= 3 || !term.endsWith('s')) return term;
  if (/(ss|us|is)$/.test(term)) return term;
  if (term.endsWith('sses')) return term.slice(0, -2);
  if (term.endsWith('ies') && term.length > 4) return `${term.slice(0, -3)}y`;
  return term.slice(0, -1);
}
