/**
 * The bearer tokens the services require, and other credentials made the same way (the task
 * proxy's first user). Taken from the runner's environment; otherwise from
 * `$CLINICALSUITE_HOME/tokens.env`, generated into it (32 random bytes, base64url, unless the caller
 * gives a default) the first time, so that they stay the same from one run to the next. Token
 * values are never printed.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const TOKENS_FILE = 'tokens.env';

export interface ResolvedTokens {
  /** Value by env var name. */
  readonly tokens: Readonly<Record<string, string>>;
  /** The tokens file, when any token lives there. */
  readonly file: string | null;
  readonly fromEnv: readonly string[];
  readonly fromFile: readonly string[];
  readonly generated: readonly string[];
}

export function parseTokensFile(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const eq = line.indexOf('=');
    if (line === '' || line.startsWith('#') || eq <= 0) continue;
    values.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  return values;
}

function renderTokensFile(values: ReadonlyMap<string, string>): string {
  const lines = [...values].map(([key, value]) => `${key}=${value}`);
  return `# Bearer tokens and sign-in credentials of the local ClinicalSuite services (generated; keep this file private).\n${lines.join('\n')}\n`;
}

export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

async function readIfPresent(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

export async function resolveTokens(options: {
  readonly names: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly home: string;
  /** The value stored for `name` when neither the environment nor the file has one; default {@link generateToken}. */
  readonly generate?: (name: string) => string;
}): Promise<ResolvedTokens> {
  const generate = options.generate ?? generateToken;
  const file = join(options.home, TOKENS_FILE);
  const existingText = await readIfPresent(file);
  const stored = parseTokensFile(existingText ?? '');
  const tokens: Record<string, string> = {};
  const fromEnv: string[] = [];
  const fromFile: string[] = [];
  const generated: string[] = [];
  for (const name of options.names) {
    const fromEnvValue = options.env[name];
    const storedValue = stored.get(name);
    if (fromEnvValue) {
      tokens[name] = fromEnvValue;
      fromEnv.push(name);
    } else if (storedValue) {
      tokens[name] = storedValue;
      fromFile.push(name);
    } else {
      tokens[name] = generate(name);
      stored.set(name, tokens[name]);
      generated.push(name);
    }
  }
  if (fromFile.length === 0 && generated.length === 0)
    return { tokens, file: null, fromEnv, fromFile, generated };
  const text = renderTokensFile(stored);
  if (text !== existingText) {
    await mkdir(options.home, { recursive: true, mode: 0o700 });
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, text, { mode: 0o600 });
    await rename(temp, file);
  }
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  return { tokens, file, fromEnv, fromFile, generated };
}

/** Where the value of `name` comes from, in words (`from the environment`, `in <file>`); never the value. */
export function whereIs(resolved: ResolvedTokens, name: string): string {
  if (resolved.fromEnv.includes(name)) return 'from the environment';
  return resolved.file === null ? 'nowhere' : `in ${resolved.file}`;
}

/** One line for the user: where each token comes from, never its value. */
export function describeTokens(resolved: ResolvedTokens): string {
  const parts: string[] = [];
  if (resolved.fromEnv.length > 0) parts.push(`${resolved.fromEnv.join(', ')} from the environment`);
  const inFile = [...resolved.fromFile, ...resolved.generated];
  if (resolved.file !== null && inFile.length > 0) parts.push(`${inFile.join(', ')} in ${resolved.file}`);
  return `tokens: ${parts.join('; ')}`;
}
