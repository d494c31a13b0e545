import { refuse, type Refusal } from './refusal.js';

/**
 * Character rules every command line and every argument obeys, before any tokenizing:
 *
 * - no control characters at all (NUL, newline, carriage return, tab, escape, C1 controls);
 * - no invisible characters: format characters (zero-width spaces and joiners, the byte-order mark,
 *   bidirectional overrides and isolates such as the RTL override), line and paragraph separators,
 *   private-use, surrogate and unassigned code points, and spaces other than the ASCII space;
 * - no compatibility characters (fullwidth letters, ligatures, superscripts, ...): text whose NFKC
 *   form differs from its NFC form is refused, so `ｌｓ` is never read as `ls` by anyone.
 *
 * Letters of any script stay allowed in arguments (a Vietnamese search term is legitimate); program
 * names are plain ASCII (checked by the policy).
 */

const CONTROL = /\p{Cc}/u;
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}]|(?! )\p{Zs}/u;

const CONTROL_NAMES: Readonly<Record<string, string>> = {
  '\0': 'a NUL byte',
  '\n': 'a newline (a second command)',
  '\r': 'a carriage return',
  '\t': 'a tab',
  '\x1b': 'an escape character',
};

function codePoint(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** The first character rule `text` breaks, or undefined. */
export function checkCharacters(text: string): Refusal | undefined {
  const control = CONTROL.exec(text);
  if (control !== null) {
    const ch = control[0];
    return refuse(
      'control_character',
      `Control characters are not allowed: ${CONTROL_NAMES[ch] ?? codePoint(ch)}`,
    ).refusal;
  }
  const invisible = INVISIBLE.exec(text);
  if (invisible !== null) {
    return refuse(
      'invisible_character',
      `Invisible or direction-changing characters are not allowed (${codePoint(invisible[0])})`,
    ).refusal;
  }
  if (text.normalize('NFKC') !== text.normalize('NFC')) {
    return refuse(
      'compatibility_character',
      'Compatibility characters (fullwidth letters, ligatures, look-alike forms) are not allowed',
    ).refusal;
  }
  return undefined;
}

/**
 * Latin look-alikes in other scripts (Cyrillic and Greek), mapped to the Latin letter they imitate.
 * Used to recognise a disguised program name (`еcho` with a Cyrillic `е`) so that it is refused as
 * a disguised command rather than sent to the translator.
 */
// Pairs of (look-alike, Latin letter), written as one string so the table stays readable.
const CONFUSABLE_PAIRS =
  'аa вb еe ёe кk мm нh оo рp сc тt уy хx іi їi јj ѕs ԁd һh ӏl ԛq ԝw үy ɡg ɩi ɪi ' +
  'αa βb εe ηn ιi κk νv οo ρp τt υu χx ωw ϲc ϳj ıi';
const CONFUSABLES: ReadonlyMap<string, string> = new Map(
  CONFUSABLE_PAIRS.split(' ').map((pair) => [pair.slice(0, -1), pair.slice(-1)] as const),
);

/**
 * What a word looks like to a reader: NFKC, invisible characters removed, Cyrillic/Greek
 * look-alikes mapped to Latin, lower case; `stripMarks` also drops diacritics (`ēcho` → `echo`).
 */
export function skeleton(word: string, options: { stripMarks?: boolean } = {}): string {
  let out = '';
  for (const ch of word.normalize('NFKC')) {
    if (INVISIBLE.test(ch) || CONTROL.test(ch)) continue;
    const lower = ch.toLowerCase();
    out += CONFUSABLES.get(lower) ?? lower;
  }
  return options.stripMarks === true ? out.normalize('NFKD').replace(/\p{M}/gu, '') : out.normalize('NFC');
}

export function isAscii(text: string): boolean {
  return /^[\x20-\x7e]*$/.test(text);
}
