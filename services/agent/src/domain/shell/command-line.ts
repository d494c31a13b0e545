import { checkCharacters } from './characters.js';
import { accept, refuse, type Checked } from './refusal.js';

/**
 * A command line read into argv WITHOUT any shell semantics: nothing is expanded, substituted,
 * globbed, redirected or chained. What it accepts reads the same to a POSIX shell and to us; anything
 * a shell would interpret is refused, naming the construct, rather than taken literally:
 *
 * - words are separated by ASCII spaces;
 * - outside quotes a word holds only letters, digits, non-ASCII letters and `_ - . , / : = + @ %`;
 *   every other ASCII character is a shell metacharacter (`; & | < > $ \` ( ) { } * ? [ ] ~ # ! ^ \`)
 *   and is refused;
 * - `'single quotes'` hold anything printable, literally (as in a shell);
 * - `"double quotes"` hold anything printable except `$`, `` ` ``, `\` and `!`, which a shell would
 *   expand there;
 * - quoted and unquoted parts next to each other form one word (`a'b c'` is `ab c`);
 * - the character rules of `characters.ts` apply to the whole line first.
 */

export interface CommandLine {
  readonly argv: readonly string[];
  /** Whether each word had a quoted part (a program name must not). */
  readonly quoted: readonly boolean[];
}

const PLAIN_ASCII = /^[A-Za-z0-9_\-.,/:=+@%]$/;

const METACHARACTERS: Readonly<Record<string, string>> = {
  ';': 'a command separator',
  '&': 'a background or && operator',
  '|': 'a pipe or || operator',
  '<': 'an input redirect',
  '>': 'an output redirect',
  $: 'a variable or $( ) command substitution',
  '`': 'a backtick command substitution',
  '(': 'a subshell or function definition',
  ')': 'a subshell or function definition',
  '{': 'a brace group or expansion',
  '}': 'a brace group or expansion',
  '*': 'a glob',
  '?': 'a glob',
  '[': 'a glob',
  ']': 'a glob',
  '~': 'a home directory expansion',
  '\\': 'an escape',
  '#': 'a comment',
  '!': 'a history expansion or negation',
  '^': 'a pipe in old shells',
};

const EXPANDED_IN_DOUBLE_QUOTES = new Set(['$', '`', '\\', '!']);

function metacharacter(ch: string, where: string) {
  return refuse(
    'metacharacter',
    `Shell syntax is not supported: ${JSON.stringify(ch)} (${METACHARACTERS[ch] ?? 'a shell metacharacter'}) ${where}`,
  );
}

export function parseCommandLine(line: string): Checked<CommandLine> {
  const bad = checkCharacters(line);
  if (bad !== undefined) return { ok: false, refusal: bad };
  const argv: string[] = [];
  const quoted: boolean[] = [];
  let word = '';
  let inWord = false;
  let wordQuoted = false;
  let mode: 'plain' | 'single' | 'double' = 'plain';
  const end = (): void => {
    if (!inWord) return;
    argv.push(word);
    quoted.push(wordQuoted);
    word = '';
    inWord = false;
    wordQuoted = false;
  };
  for (const ch of line) {
    if (mode === 'single') {
      if (ch === "'") mode = 'plain';
      else word += ch;
      continue;
    }
    if (mode === 'double') {
      if (ch === '"') mode = 'plain';
      else if (EXPANDED_IN_DOUBLE_QUOTES.has(ch)) return metacharacter(ch, 'inside double quotes');
      else word += ch;
      continue;
    }
    if (ch === ' ') {
      end();
    } else if (ch === "'" || ch === '"') {
      mode = ch === "'" ? 'single' : 'double';
      inWord = true;
      wordQuoted = true;
    } else if (ch.length === 1 && ch <= '\x7f') {
      if (!PLAIN_ASCII.test(ch)) return metacharacter(ch, 'outside quotes');
      word += ch;
      inWord = true;
    } else {
      word += ch; // a letter of another script (the character rules passed)
      inWord = true;
    }
  }
  if (mode !== 'plain') {
    return refuse('unterminated_quote', `Unterminated ${mode === 'single' ? 'single' : 'double'} quote`);
  }
  end();
  if (argv.length === 0) return refuse('empty', 'The command is empty');
  return accept({ argv, quoted });
}

const PLAIN_WORD = /^[A-Za-z0-9_\-.,/:=+@%]+$/;

/**
 * The command line that `parseCommandLine` reads back into exactly `argv`: plain words as they are,
 * others in single quotes, a single quote itself as `"'"` glued to its neighbours (`it's` becomes
 * `'it'"'"'s'`).
 */
export function formatCommandLine(argv: readonly string[]): string {
  return argv
    .map((arg) => {
      if (PLAIN_WORD.test(arg)) return arg;
      return arg
        .split("'")
        .map((piece) => (piece === '' ? '' : `'${piece}'`))
        .join(`"'"`)
        .replace(/^$/, "''");
    })
    .join(' ');
}
