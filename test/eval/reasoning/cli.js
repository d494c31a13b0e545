// The command-line parts the evaluation scripts (run.js, calibrate.js) share: the default case
// file, the timeouts, the common options ([cases.json] --url URL --rules-only --help), the service
// to send to (started here unless --url) and the exit handling.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CaseFileError } from './lib.js';
import { ServiceStartError, startService } from './service.js';

export const DEFAULT_CASES = join(dirname(fileURLToPath(import.meta.url)), 'cases/primary-care.json');
export const HEALTH_TIMEOUT_MS = Number(process.env['EVAL_HEALTH_TIMEOUT_MS'] ?? 120_000);
export const REQUEST_TIMEOUT_MS = Number(process.env['EVAL_REQUEST_TIMEOUT_MS'] ?? 120_000);

/** Bad command line; an empty message asks for the usage alone (--help). */
export class UsageError extends Error {}

/**
 * Parses the common options and, through `option`, the script's own: `option(options, arg, value)`
 * sets what `arg` means (reading its value with `value()`) and returns false for an unknown `arg`.
 * @template {object} T
 * @param {string[]} argv
 * @param {T} defaults the script's own options
 * @param {(options: T & { cases: string, url: string | null, rulesOnly: boolean }, arg: string, value: () => string) => boolean} option
 */
export function parseArgs(argv, defaults, option) {
  const options = {
    cases: DEFAULT_CASES,
    url: /** @type {string | null} */ (null),
    rulesOnly: false,
    ...defaults,
  };
  let positional = 0;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    const value = () => {
      const v = argv[i + 1];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${arg} needs a value`);
      i += 1;
      return v;
    };
    if (arg === '--url') options.url = value().replace(/\/+$/, '');
    else if (arg === '--rules-only') options.rulesOnly = true;
    else if (arg === '--help' || arg === '-h') throw new UsageError('');
    else if (arg.startsWith('--')) {
      if (!option(options, arg, value)) throw new UsageError(`unknown option ${arg}`);
    } else if (positional++ === 0) options.cases = resolve(arg);
    else throw new UsageError(`unexpected argument ${arg}`);
  }
  return options;
}

/**
 * The service at `url`, or the built one started with `env` (stopped by `stop`).
 * @param {string | null} url
 * @param {NodeJS.ProcessEnv} [env]
 */
export async function connect(url, env = process.env) {
  if (url !== null) return { url, stop: async () => {} };
  return startService({ env, healthTimeoutMs: HEALTH_TIMEOUT_MS });
}

/**
 * Runs `main` and sets the exit status it returns; a usage error, a service that cannot be started
 * or a bad case file is its message (and the usage for a usage error) with status 2.
 * @param {string} name @param {string} usage @param {() => Promise<number>} main
 */
export function runMain(name, usage, main) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      if (error instanceof UsageError || error instanceof ServiceStartError) {
        if (error.message !== '') console.error(`${name}: ${error.message}`);
        if (error instanceof UsageError) console.error(usage);
      } else if (error instanceof CaseFileError) console.error(error.message);
      else console.error(error);
      process.exitCode = 2;
    },
  );
}
