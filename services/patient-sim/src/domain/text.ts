/**
 * Keyword matching for Vietnamese and English messages. Pure.
 *
 * Vietnamese typed with diacritics is matched with them: many syllables differ only by their marks
 * ("họ" surname / "ho" cough, "gần" near / "gan" liver, "dạ" yes / "da" skin). A message typed
 * without any diacritics ("chi co bi ho khong") is matched with the keywords' marks removed.
 * English is matched case-insensitively, and a keyword's last word may take a short ending
 * ("cough" matches "coughing").
 */

export interface PreparedText {
  /** Lowercase, NFC, marks kept; runs of non-letters/digits one space; padded by spaces. */
  readonly accented: string;
  /** The same without diacritics (đ → d). */
  readonly folded: string;
  /** Whether the text has Vietnamese diacritics (else Vietnamese keywords match folded). */
  readonly marked: boolean;
}

function words(text: string): string {
  return text
    .normalize('NFC')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ')
    .trim();
}

function stripMarks(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .replace(/đ/g, 'd')
    .normalize('NFC');
}

/** Lowercase words without diacritics, padded by spaces. */
export function fold(text: string): string {
  return ` ${stripMarks(words(text))} `;
}

export function prepareText(text: string): PreparedText {
  const accented = words(text);
  const folded = stripMarks(accented);
  return { accented: ` ${accented} `, folded: ` ${folded} `, marked: accented !== folded };
}

/** Inflections an English keyword may take ("coughing", "feverish", "vomited", "painful"). */
const ENGLISH_ENDING = /^(s|es|d|ed|ing|ish|y|ful|ly) /;

/**
 * Whether padded text holds the phrase as whole words. `suffixes`: the last word may take an
 * English inflection, for phrases of 4+ letters ending in a letter.
 */
export function containsPhrase(paddedText: string, phrase: string, suffixes = false): boolean {
  const p = words(phrase);
  if (p === '') return false;
  if (paddedText.includes(` ${p} `)) return true;
  if (!suffixes || p.length < 4 || !/[a-z]$/.test(p)) return false;
  for (let at = paddedText.indexOf(` ${p}`); at >= 0; at = paddedText.indexOf(` ${p}`, at + 1)) {
    if (ENGLISH_ENDING.test(paddedText.slice(at + p.length + 1))) return true;
  }
  return false;
}

/** A Vietnamese keyword: with its marks in marked text, without them in unmarked text. */
export function matchesVi(text: PreparedText, keyword: string): boolean {
  return text.marked
    ? containsPhrase(text.accented, keyword)
    : containsPhrase(text.folded, stripMarks(keyword));
}

/** An English keyword: case-insensitive, diacritics ignored, inflections allowed. */
export function matchesEn(text: PreparedText, keyword: string): boolean {
  return containsPhrase(text.folded, stripMarks(keyword), true);
}
