import { z } from 'zod';
import { kitConfigSchema, loadConfig } from '@clinicalsuite/kit';

/** The kit's variables with this service's defaults, and the service's own. */
export const echoConfigSchema = kitConfigSchema({
  port: 8090,
  maxConcurrency: 4,
  requestTimeoutMs: 30_000,
}).extend({
  /** This service's bearer token (scope `echo`). */
  ECHO_API_TOKEN: z.string().min(16).optional(),
  /** A text file whose first line starts every echo; not ready until it can be read. */
  ECHO_GREETING_FILE: z.string().default('greeting.txt'),
});

export type EchoConfig = z.output<typeof echoConfigSchema>;

/** Parsed once; a bad variable stops start-up with a message naming it (exit 78 under runMain). */
export function loadEchoConfig(env: Record<string, string | undefined> = process.env): EchoConfig {
  return loadConfig(echoConfigSchema, env);
}
