/**
 * Text handling before any engine sees it. Pure.
 *
 * espeak-ng reads its input as text only (SSML is off: no `-m`), but its command line still
 * takes `[[...]]` as raw phoneme input; doubled brackets are made single so a text cannot inject
 * phonemes. Control characters become spaces; the text is NFC-normalised so Vietnamese composed
 * and decomposed diacritics read alike.
 */

/** Unicode code points, the unit of the length limit. */
export function characterCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

export function normalizeText(text: string): string {
  return (
    text
      .normalize('NFC')
      .replace(/\r\n?/g, '\n')
      // Control characters but tab and newline, and the BOM: spoken as nothing.
      .replace(/[\p{Cc}\ufeff]/gu, (c) => (c === '\n' || c === '\t' ? c : ' '))
      .replace(/\[{2,}/g, '[')
      .replace(/\]{2,}/g, ']')
      .replace(/[ \t]+/g, ' ')
      // Spaces around a line break, tried from the first of a run only.
      .replace(/(?<! ) *\n */g, '\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
  );
}

/** Whether there is anything to say: a letter or a digit in any script. */
export function hasSpeakableContent(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}

export interface Sentence {
  /** The sentence without its final punctuation. */
  readonly text: string;
  /** `.`, `!`, `?` (the last of a run such as `?!`), or `.` where a line or the text ended. */
  readonly terminator: '.' | '!' | '?';
}

/** Tried from the first mark of a run only (from each, a long run of marks is read again). */
const SENTENCE_END = /(?<![.!?…])([.!?…]+)(?=\s|$)|\n+/gu;

/**
 * Sentences as Piper synthesises them, one at a time: text up to `.`, `!`, `?` or `…` followed
 * by white space, or a line break. Pieces with nothing to say are dropped.
 */
export function splitSentences(text: string): Sentence[] {
  const out: Sentence[] = [];
  let start = 0;
  const push = (body: string, punct: string): void => {
    const clean = body.replace(/\s+/g, ' ').trim();
    if (!hasSpeakableContent(clean)) return;
    const last = punct.replace(/…/g, '.').slice(-1);
    out.push({ text: clean, terminator: last === '!' || last === '?' ? last : '.' });
  };
  for (const m of text.matchAll(SENTENCE_END)) {
    push(text.slice(start, m.index), m[1] ?? '.');
    start = m.index + m[0].length;
  }
  push(text.slice(start), '.');
  return out;
}

/** The clause punctuation inside a sentence, in order: what Piper keeps between clauses. */
export function clauseBreaks(sentence: string): string[] {
  return [...sentence.matchAll(/([,;:])(?=\s)/g)].map((m) => m[1] ?? ',');
}
