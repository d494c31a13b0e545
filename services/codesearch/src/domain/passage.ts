import type { IndexedCode } from './lexical-index.js';

/** The text embedded for a code: its main title and up to two of the set's own synonyms. */
export function passageOf(code: IndexedCode): string {
  const r = code.record;
  return [r.title_en ?? r.title_vi ?? r.code, ...r.synonyms.slice(0, 2)].join('; ');
}
