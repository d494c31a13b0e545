import { defineRoute, requestContext, type AnyRoute } from '@clinicalsuite/kit';
import express, { type RequestHandler } from 'express';
import { ShellRequestSchema, ShellResponseSchema, type ShellResponse } from '../schemas/shell.js';
import type { RoutesContext } from './context.js';

/**
 * `POST /shell`: one allowlisted command, run without a shell (see docs/shell.md for the threat
 * model). While SHELL_EXEC_ENABLED is off the route answers 403 before reading the body.
 */
export function shellRoute({ config, useCases }: RoutesContext): AnyRoute {
  const shell = useCases.shellCommand;
  // Before the body is read or validated: a disabled shell tells nothing more than that.
  const refuseWhenDisabled: RequestHandler = (req, _res, next) => {
    if (shell.enabled) {
      next();
      return;
    }
    next(shell.refuseDisabled(requestContext(req).log));
  };
  const translationMs = config.SHELL_TRANSLATE ? config.AGENT_LLM_TIMEOUT_MS : 0;
  return defineRoute({
    method: 'post',
    path: '/shell',
    summary:
      'Run an allowlisted command (or a natural-language request translated into one), without a shell',
    description:
      'Off unless SHELL_EXEC_ENABLED (403). `command` is either a command line whose first word is an ' +
      'allowlisted program (SHELL_ALLOWLIST) or, with SHELL_TRANSLATE, a natural-language request that the ' +
      'LLM turns into one. Either way the argv passes the same policy: no shell syntax (pipes, redirects, ' +
      '`;`, `$( )`, backticks, globs, `~`, variables: refused, never interpreted), a bare allowlisted ' +
      'program name, no absolute paths or `..` in arguments, no options that write, delete or execute, ' +
      'and the denylist (recursive delete of the root, filesystem creation, fork bombs, ...). It runs as ' +
      'argv (no shell) in `workdir` inside SHELL_WORKDIR, as an unprivileged user, with a scrubbed ' +
      'environment (PATH, LANG, HOME only), stdin closed, `timeout` capped at SHELL_MAX_TIMEOUT_S (the ' +
      'process group is killed; 200 with `timed_out: true`) and stdout/stderr each capped at ' +
      'SHELL_MAX_OUTPUT_BYTES. A command that exits non-zero is a 200 with its `exit_code`; a program on ' +
      'the allowlist but not installed is exit code 127.',
    tags: ['shell'],
    // A typed command needs no LLM: the shell answers while the upstreams are still down.
    requiresReady: false,
    body: ShellRequestSchema,
    bodyParser: [refuseWhenDisabled, express.json({ limit: config.BODY_LIMIT })],
    response: ShellResponseSchema,
    responses: {
      403: {
        description:
          'Shell execution disabled (SHELL_EXEC_ENABLED), or the command blocked (the detail names the ' +
          'reason), or a natural-language request the LLM could not turn into an allowed command',
      },
      404: { description: '`workdir` does not exist inside SHELL_WORKDIR' },
      422: { description: 'Invalid body; lists the failing fields' },
      502: { description: 'Translation needed and every LLM upstream failed' },
    },
    // The command's own deadline, plus the translation, plus room to answer.
    timeoutMs: config.SHELL_MAX_TIMEOUT_S * 1000 + translationMs + 30_000,
    handler: ({ body, signal, log }): Promise<ShellResponse> => shell.run(body, { signal, log }),
  });
}
