export { checkCharacters, skeleton } from './characters.js';
export { formatCommandLine, parseCommandLine, type CommandLine } from './command-line.js';
export { DENY_RULES, matchDenylist, type DenyRule } from './denylist.js';
export { checkOptions, COMMAND_WORDS, NEVER_RUN, neverRunReason, OPTION_RULES } from './programs.js';
export {
  checkCommand,
  checkPathArgument,
  checkTranslated,
  decide,
  looksLikeCommand,
  MAX_ARGUMENTS,
  shellPolicy,
  type Decision,
  type ShellPolicy,
} from './policy.js';
export type { Checked, Refusal, RefusalCode } from './refusal.js';
export {
  parseTranslation,
  SHELL_COMMAND_SCHEMA,
  TRANSLATION_MAX_TOKENS,
  translationMessages,
} from './translate.js';
export { relativeWorkdir } from './workdir.js';
