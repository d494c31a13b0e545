import { z } from 'zod';

/** `POST /shell`: request and response bodies (the spec names the request; the response is ours). */

export const ShellRequestSchema = z.object({
  command: z
    .string()
    .refine((c) => c.trim() !== '', 'must not be empty or blank')
    .describe(
      'A command line of an allowlisted program (`ls -l reports`), or a natural-language request ' +
        '("list the files in reports") that the LLM turns into one. No shell: quotes group words, ' +
        'nothing else is interpreted, and shell syntax is refused (403).',
    ),
  workdir: z
    .string()
    .max(4096)
    .nullable()
    .default(null)
    .describe('Working directory, relative to SHELL_WORKDIR (or absolute inside it); null: SHELL_WORKDIR.'),
  timeout: z
    .number()
    .int()
    .min(1)
    .max(86_400)
    .default(60)
    .describe('Seconds before the command is killed; capped at SHELL_MAX_TIMEOUT_S.'),
});

/** A request with its defaults applied (what `Shell.run` takes). */
export type ShellRequest = z.output<typeof ShellRequestSchema>;

export const ShellResponseSchema = z.object({
  command: z.string().describe('The command that ran, as a command line (argv joined, quoted where needed)'),
  argv: z.array(z.string()).describe('The program and its arguments, exactly as executed (no shell)'),
  translated: z.boolean().describe('The command came from the LLM translating a natural-language request'),
  workdir: z.string().describe('Where it ran, relative to SHELL_WORKDIR (`.` for SHELL_WORKDIR itself)'),
  exit_code: z.number().int().nullable().describe('Exit status; null when a signal ended it'),
  signal: z
    .string()
    .nullable()
    .describe('The signal that ended it (SIGKILL after a timeout or the output cap)'),
  stdout: z.string().describe('Standard output (UTF-8), at most SHELL_MAX_OUTPUT_BYTES bytes'),
  stderr: z.string().describe('Standard error (UTF-8), at most SHELL_MAX_OUTPUT_BYTES bytes'),
  stdout_truncated: z
    .boolean()
    .describe('stdout passed the cap: the rest was dropped and the command stopped'),
  stderr_truncated: z
    .boolean()
    .describe('stderr passed the cap: the rest was dropped and the command stopped'),
  timed_out: z.boolean().describe('The command ran past its timeout and was killed (with its process group)'),
  timeout_s: z.number().int().describe('The timeout applied: min(request timeout, SHELL_MAX_TIMEOUT_S)'),
  duration_ms: z.number().int().describe('Milliseconds from start to exit'),
});

export type ShellResponse = z.infer<typeof ShellResponseSchema>;
