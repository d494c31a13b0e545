#!/usr/bin/env node
/**
 * Prints a TASK_PROXY_USERS_FILE line for a user: reads the password from stdin (its first line; from
 * a terminal without echo), never from the command line, where `ps` and shell history would see it.
 *
 *   node services/task-proxy/dist/hash-password.js alice < password.txt >> users.txt
 *   printf '%s' "$PASSWORD" | node services/task-proxy/dist/hash-password.js alice
 *
 * `--log-n <k>` sets scrypt's cost to N=2^k (default 17, OWASP's recommendation; 10 to 20).
 */
import { DEFAULT_SCRYPT, hashPassword } from './adapters/passwords.js';
import { USERNAME } from './adapters/users.js';

const USAGE = 'usage: hash-password.js <username> [--log-n 17] < password';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** From a terminal: read without echo, up to Enter. */
function readTty(): Promise<string> {
  process.stderr.write('Password: ');
  process.stdin.setRawMode(true);
  process.stdin.resume();
  return new Promise((resolve) => {
    const typed: string[] = [];
    const onData = (data: Buffer): void => {
      for (const ch of data.toString('utf8')) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          process.stdin.off('data', onData);
          process.stdin.setRawMode(false);
          process.stdin.pause();
          process.stderr.write('\n');
          resolve(typed.join(''));
          return;
        }
        if (ch === '\u0003') {
          process.stdin.setRawMode(false);
          process.stderr.write('\n');
          process.exit(130);
        }
        if (ch === '\u007f' || ch === '\b') typed.pop();
        else typed.push(ch);
      }
    };
    process.stdin.on('data', onData);
  });
}

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(64);
}

async function main(argv: readonly string[]): Promise<void> {
  let username: string | undefined;
  let logN = Math.log2(DEFAULT_SCRYPT.N);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--log-n') {
      const value = argv[++i] ?? '';
      if (!/^\d{1,2}$/.test(value) || Number(value) < 10 || Number(value) > 20)
        fail('--log-n must be 10 to 20');
      logN = Number(value);
    } else if (arg === '-h' || arg === '--help') {
      process.stdout.write(`${USAGE}\n`);
      return;
    } else if (username === undefined) username = arg;
    else fail(`unexpected argument ${arg}`);
  }
  if (username === undefined) fail('the username is missing');
  if (!USERNAME.test(username)) fail('the username must be letters, digits, ".", "_", "@", "-" (at most 64)');
  const password = process.stdin.isTTY ? await readTty() : ((await readStdin()).split(/\r?\n/)[0] ?? '');
  if (password === '') fail('the password (stdin) is empty');
  const hash = await hashPassword(password, { ...DEFAULT_SCRYPT, N: 2 ** logN });
  process.stdout.write(`${username}:${hash}\n`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
