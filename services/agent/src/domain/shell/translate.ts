import type { ChatMessage } from '../types.js';
import { accept, refuse, type Checked } from './refusal.js';

/**
 * Natural language to argv: the prompt and the JSON schema of the LLM call, and the reading of its
 * reply. The reply is only a proposal: it goes through the whole policy like a typed command. The
 * prompt asks for the empty argv when no allowed program fits, so the model has a way to decline.
 */

/** Longest argument, and most arguments, the grammar lets the model write. */
export const TRANSLATION_MAX_ARG_CHARS = 200;
export const TRANSLATION_MAX_ARGS = 16;

export const SHELL_COMMAND_SCHEMA = {
  name: 'shell_command',
  schema: {
    type: 'object',
    properties: {
      argv: {
        type: 'array',
        items: { type: 'string', maxLength: TRANSLATION_MAX_ARG_CHARS },
        maxItems: TRANSLATION_MAX_ARGS,
      },
    },
    required: ['argv'],
    additionalProperties: false,
  },
} as const;

/** Tokens the translation may use: enough for 16 short arguments in JSON. */
export const TRANSLATION_MAX_TOKENS = 256;

export function translationMessages(request: string, allowlist: readonly string[]): ChatMessage[] {
  const system = [
    'You turn a request into ONE command for a Linux machine, as JSON: {"argv": ["program", "arg1", ...]}.',
    `The only programs available: ${allowlist.join(', ')}.`,
    'Each argument is its own string. There is no shell: no pipes, redirects, ";", "&&", variables, ' +
      '"$( )", backticks, globs or "~".',
    'Paths are relative to the current directory: never an absolute path (starting with "/") and never "..".',
    'Only read and show information: never change, move or delete anything.',
    'When no available program can do it, or it would change or delete something, answer {"argv": []}.',
    'Examples: "list the files here" -> {"argv": ["ls", "-l"]}; "how much disk space is free" -> ' +
      '{"argv": ["df", "-h"]}; "delete the logs" -> {"argv": []}.',
  ].join('\n');
  return [
    { role: 'system', content: system },
    { role: 'user', content: request },
  ];
}

/**
 * The argv of the model's reply. Refused (`untranslatable`) when it is not the schema's JSON, or
 * when the model declined (empty argv).
 */
export function parseTranslation(text: string): Checked<readonly string[]> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse(
      'untranslatable',
      'The request could not be translated into a command (the model answered no JSON)',
    );
  }
  const argv = typeof value === 'object' && value !== null ? (value as { argv?: unknown }).argv : undefined;
  if (!Array.isArray(argv) || !argv.every((a): a is string => typeof a === 'string')) {
    return refuse(
      'untranslatable',
      'The request could not be translated into a command (no argv in the answer)',
    );
  }
  if (argv.length === 0 || argv[0] === '') {
    return refuse('untranslatable', 'No allowed command does what was asked');
  }
  return accept(argv);
}
