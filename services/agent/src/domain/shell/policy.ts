import { checkCharacters, isAscii, skeleton } from './characters.js';
import { formatCommandLine, parseCommandLine } from './command-line.js';
import { matchDenylist } from './denylist.js';
import { checkOptions, COMMAND_WORDS, neverRunReason } from './programs.js';
import { accept, quote, refuse, type Checked, type Refusal } from './refusal.js';

/**
 * The shell policy: a pure function from the request's text (or a translated argv) to "run this argv"
 * or a refusal naming the reason. Layers, each enough on its own for what it guards:
 *
 * 1. length cap (SHELL_MAX_COMMAND_CHARS);
 * 2. the spec's denylist on the text's skeleton (names the danger: recursive delete of the root,
 *    filesystem creation, fork bomb, ...);
 * 3. character rules (no control, invisible or compatibility characters);
 * 4. the parser: argv without any shell semantics; shell syntax is refused, not taken literally;
 * 5. the program: a bare ASCII name (no path, no `FOO=bar` prefix, no look-alike letters), never one
 *    that runs other programs or code, and on the allowlist;
 * 6. arguments: no absolute path and no `..` anywhere (also after `=` or a short option:
 *    `--file=/etc/x`, `-f/etc/x`), per-program options that write, delete or execute refused;
 * 7. the denylist again on the parsed argv (quoting cannot hide `rm -rf /`).
 *
 * A natural-language request goes to the translator; its argv is formatted back into a command line
 * and goes through every layer above, exactly like a typed command.
 */

export interface ShellPolicy {
  readonly allowlist: ReadonlySet<string>;
  readonly maxCommandChars: number;
  /** Natural-language requests may be translated by the LLM. */
  readonly translate: boolean;
}

export function shellPolicy(config: {
  readonly SHELL_ALLOWLIST: readonly string[];
  readonly SHELL_MAX_COMMAND_CHARS: number;
  readonly SHELL_TRANSLATE: boolean;
}): ShellPolicy {
  return {
    allowlist: new Set(config.SHELL_ALLOWLIST),
    maxCommandChars: config.SHELL_MAX_COMMAND_CHARS,
    translate: config.SHELL_TRANSLATE,
  };
}

/** Arguments per command. */
export const MAX_ARGUMENTS = 128;

export type Decision =
  | { readonly kind: 'command'; readonly argv: readonly string[] }
  | { readonly kind: 'translate' }
  | { readonly kind: 'refused'; readonly refusal: Refusal };

const refused = (refusal: Refusal): Decision => ({ kind: 'refused', refusal });

/** What to do with the request's `command`: run the argv, translate it, or refuse it. */
export function decide(text: string, policy: ShellPolicy): Decision {
  const early = checkText(text, policy);
  if (early !== undefined) return refused(early);
  // Trailing spaces are tried from the first of their run only (from each, a long run is read again).
  const line = text.replace(/^ +|(?<! ) +$/g, '');
  if (line === '') return refused(refuse('empty', 'The command is empty').refusal);
  if (looksLikeCommand(line, policy)) {
    const checked = checkCommand(line, policy);
    return checked.ok ? { kind: 'command', argv: checked.value } : refused(checked.refusal);
  }
  if (policy.translate) return { kind: 'translate' };
  return refused(
    refuse(
      'not_a_command',
      `Not a command on the allowlist (${[...policy.allowlist].join(', ')}), and natural-language ` +
        'translation is off (SHELL_TRANSLATE)',
    ).refusal,
  );
}

/** A translated argv, checked exactly as if it had been typed. */
export function checkTranslated(argv: readonly string[], policy: ShellPolicy): Checked<readonly string[]> {
  // The denylist and the program first, on the argv as the model wrote it (formatted, an odd program
  // name would only read as quoted).
  const deny = matchDenylist(argv.join(' '));
  if (deny !== undefined) return refuse('denylist', `Dangerous command blocked: ${deny.description}`);
  const program = checkProgram(argv[0] ?? '', false, policy);
  if (program !== undefined) return { ok: false, refusal: program };
  const line = formatCommandLine(argv);
  const checked = checkCommand(line, policy);
  if (!checked.ok) return checked;
  const same = checked.value.length === argv.length && checked.value.every((a, i) => a === argv[i]);
  // Cannot happen (formatCommandLine is parseCommandLine's inverse); refuse rather than trust it.
  if (!same) return refuse('metacharacter', 'The command does not read back as the same arguments');
  return checked;
}

/** Length, denylist and character rules, on any text before it is read. */
function checkText(text: string, policy: ShellPolicy): Refusal | undefined {
  if (text.length > policy.maxCommandChars) {
    return refuse('too_long', `The command is longer than ${policy.maxCommandChars} characters`).refusal;
  }
  const deny = matchDenylist(text);
  if (deny !== undefined) return refuse('denylist', `Dangerous command blocked: ${deny.description}`).refusal;
  return checkCharacters(text);
}

const COMMAND_SYNTAX = /[/\\=$`;|&<>(){}[\]*~#^]/;
const OPTION_LIKE = /^--?[A-Za-z]/;

/**
 * Whether a request is a command rather than natural language: it starts with an allowlisted or a
 * well-known program name (or a look-alike of one), its first word holds a path, an assignment or
 * shell syntax, or a word looks like an option (`-rf`, `--help`).
 */
export function looksLikeCommand(line: string, policy: ShellPolicy): boolean {
  const words = line.split(' ').filter((w) => w !== '');
  const first = words[0] ?? '';
  if (policy.allowlist.has(first)) return true;
  if (first.startsWith("'") || first.startsWith('"') || COMMAND_SYNTAX.test(first)) return true;
  if (words.some((w) => OPTION_LIKE.test(w))) return true;
  const look = skeleton(first, { stripMarks: true });
  if (!isAscii(first) && (policy.allowlist.has(look) || COMMAND_WORDS.has(look))) return true;
  return COMMAND_WORDS.has(first.toLowerCase()) || policy.allowlist.has(first.toLowerCase());
}

/** A command line: every layer from the length cap to the denylist on the parsed argv. */
export function checkCommand(line: string, policy: ShellPolicy): Checked<readonly string[]> {
  const early = checkText(line, policy);
  if (early !== undefined) return { ok: false, refusal: early };
  const parsed = parseCommandLine(line);
  if (!parsed.ok) return parsed;
  const { argv, quoted } = parsed.value;
  if (argv.length > MAX_ARGUMENTS) {
    return refuse('too_many_arguments', `More than ${MAX_ARGUMENTS} arguments`);
  }
  const program = checkProgram(argv[0] ?? '', quoted[0] === true, policy);
  if (program !== undefined) return { ok: false, refusal: program };
  const args = argv.slice(1);
  for (const arg of args) {
    const bad = checkPathArgument(arg);
    if (bad !== undefined) return { ok: false, refusal: bad };
  }
  const option = checkOptions(argv[0] ?? '', args);
  if (option !== undefined)
    return refuse('denied_option', `Option not allowed for ${argv[0] ?? ''}: ${option}`);
  const deny = matchDenylist(argv.join(' '));
  if (deny !== undefined) return refuse('denylist', `Dangerous command blocked: ${deny.description}`);
  return accept(argv);
}

const PROGRAM_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

function checkProgram(program: string, wasQuoted: boolean, policy: ShellPolicy): Refusal | undefined {
  if (wasQuoted) return refuse('program_quoted', 'The program name must be a plain word, not quoted').refusal;
  if (program.includes('/')) {
    return refuse(
      'program_path',
      `The program must be a bare name from the allowlist, not a path (${quote(program)})`,
    ).refusal;
  }
  if (program.includes('=')) {
    return refuse('env_assignment', 'Environment assignments (NAME=value before a command) are not allowed')
      .refusal;
  }
  if (!isAscii(program)) {
    const look = skeleton(program, { stripMarks: true });
    const imitates = isAscii(look) && PROGRAM_NAME.test(look) ? ` (it looks like ${quote(look)})` : '';
    return refuse('lookalike_program', `The program name must be plain ASCII${imitates}`).refusal;
  }
  if (!PROGRAM_NAME.test(program)) {
    return refuse('program_name', `Not a program name: ${quote(program)}`).refusal;
  }
  const never = neverRunReason(program);
  if (never !== undefined) {
    return refuse('program_never_allowed', `${program} is never run: it ${never}`).refusal;
  }
  if (!policy.allowlist.has(program)) {
    return refuse(
      'program_not_allowed',
      `${program} is not on the allowlist (${[...policy.allowlist].join(', ')})`,
    ).refusal;
  }
  return undefined;
}

/**
 * Arguments never name a path outside the working directory: no absolute path (also as an option's
 * value: `--file=/x`, `-f/x`, `if=/x`) and no `..` component. Patterns that merely look like paths
 * (`grep /api`) are refused too; quote-free relative names are the way.
 */
export function checkPathArgument(arg: string): Refusal | undefined {
  if (arg.startsWith('/') || arg.includes('=/') || /^-[-\w]*\//.test(arg)) {
    return refuse(
      'absolute_path',
      `Absolute paths are not allowed (${quote(arg)}): paths are relative to the working directory`,
    ).refusal;
  }
  if (arg.includes('../') || arg.endsWith('..')) {
    return refuse(
      'parent_path',
      `".." is not allowed (${quote(arg)}): commands stay in the working directory`,
    ).refusal;
  }
  return undefined;
}
