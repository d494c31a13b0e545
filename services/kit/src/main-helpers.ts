import { ConfigError } from './config.js';

/**
 * Runs a service's `main()`: a configuration error prints its message (naming the variable) and
 * exits 78 (EX_CONFIG) without a stack trace; any other start-up failure prints and exits 1.
 */
export function runMain(main: () => Promise<unknown>): void {
  main().catch((error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    process.stderr.write(
      `start-up failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}
