/**
 * `node services/task-proxy/dist/hash-password.js <username>`: the password from stdin, a users-file
 * line on stdout that the proxy accepts. Runs the built CLI (`npm test` builds first).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { parseHash, verifyPassword } from '../../services/task-proxy/src/adapters/passwords.js';
import { parseUsersFile } from '../../services/task-proxy/src/adapters/users.js';

const CLI = new URL('../../services/task-proxy/dist/hash-password.js', import.meta.url).pathname;

function run(args: string[], input: string) {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npx tsc -b services/task-proxy)`);
  return spawnSync(process.execPath, [CLI, ...args], { input, encoding: 'utf8' });
}

describe('hash-password CLI', () => {
  it('prints a users-file line for the password read from stdin', async () => {
    const out = run(['dr.tran', '--log-n', '10'], 'mật khẩu dài\n');
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(/^dr\.tran:scrypt\$1024\$8\$1\$\S+\n$/);
    const users = parseUsersFile(out.stdout, 'stdout');
    const stored = users.get('dr.tran');
    expect(stored).toBeDefined();
    expect(await verifyPassword('mật khẩu dài', stored!)).toBe(true);
    expect(await verifyPassword('mật khẩu', stored!)).toBe(false);
    expect(out.stdout).not.toContain('khẩu');
  });

  it('uses OWASP cost by default', () => {
    const out = run(['alice'], 'pw');
    expect(out.status).toBe(0);
    expect(parseHash(out.stdout.trim().slice('alice:'.length)).params).toEqual({ N: 2 ** 17, r: 8, p: 1 });
  });

  it('refuses a missing or bad username, an empty password and a bad cost', () => {
    for (const [args, input, message] of [
      [[], 'pw', 'the username is missing'],
      [['bad name'], 'pw', 'the username must be'],
      [['alice'], '', 'the password (stdin) is empty'],
      [['alice', '--log-n', '30'], 'pw', '--log-n must be 10 to 20'],
    ] as const) {
      const out = run([...args], input);
      expect(out.status).toBe(64);
      expect(out.stderr).toContain(message);
      expect(out.stdout).toBe('');
    }
  });
});
