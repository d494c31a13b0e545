import { describe, expect, it } from '@jest/globals';
import { BadRequestError } from '@clinicalsuite/kit';
import {
  DEFAULT_SCRYPT,
  formatHash,
  hashPassword,
  parseHash,
  PasswordHashFormatError,
  verifyPassword,
} from '../../services/task-proxy/src/adapters/passwords.js';
import {
  parseUsersFile,
  UserDirectory,
  UsersFileError,
} from '../../services/task-proxy/src/adapters/users.js';
import { clientAddress } from '../../services/task-proxy/src/domain/client-address.js';
import { checkOrigin } from '../../services/task-proxy/src/domain/origin.js';
import { FailureWindow } from '../../services/task-proxy/src/domain/rate-limit.js';
import { SESSION_ID, SessionStore, type SessionEnd } from '../../services/task-proxy/src/domain/sessions.js';
import { ACTIONS, parseAction } from '../../services/task-proxy/src/schemas/actions.js';
import { FAST_SCRYPT, writeUsersFile } from './helpers.js';

const LIMITS = { maxMessageChars: 100, maxTitleChars: 20, maxDescriptionChars: 50 };

describe('passwords', () => {
  it('hashes in the self-describing scrypt format and verifies only the right password', async () => {
    const stored = await hashPassword('s3cret ✓', FAST_SCRYPT);
    expect(stored).toMatch(/^scrypt\$1024\$8\$1\$[A-Za-z0-9+/]+=*\$[A-Za-z0-9+/]+=*$/);
    const parsed = parseHash(stored);
    expect(parsed.params).toEqual(FAST_SCRYPT);
    expect(formatHash(parsed)).toBe(stored);
    expect(await verifyPassword('s3cret ✓', parsed)).toBe(true);
    expect(await verifyPassword('s3cret', parsed)).toBe(false);
    expect(await verifyPassword('', parsed)).toBe(false);
    // A new salt each time.
    expect(await hashPassword('s3cret ✓', FAST_SCRYPT)).not.toBe(stored);
  });

  it('normalizes Unicode so the same password typed differently matches', async () => {
    const composed = 'mật khẩu'; // NFC
    const decomposed = composed.normalize('NFD');
    expect(decomposed).not.toBe(composed);
    const parsed = parseHash(await hashPassword(composed, FAST_SCRYPT));
    expect(await verifyPassword(decomposed, parsed)).toBe(true);
  });

  it('defaults to OWASP scrypt cost', () => {
    expect(DEFAULT_SCRYPT).toEqual({ N: 2 ** 17, r: 8, p: 1 });
  });

  it('refuses malformed hashes and costs outside the bounds without echoing them', () => {
    const salt = Buffer.alloc(16, 1).toString('base64');
    const hash = Buffer.alloc(32, 2).toString('base64');
    for (const bad of [
      'plain-text-password',
      `bcrypt$10$8$1$${salt}$${hash}`,
      `scrypt$1000$8$1$${salt}$${hash}`, // not a power of two
      `scrypt$${2 ** 24}$8$1$${salt}$${hash}`, // too costly
      `scrypt$1024$0$1$${salt}$${hash}`,
      `scrypt$1024$8$99$${salt}$${hash}`,
      `scrypt$1024$8$1$not base64!$${hash}`,
      `scrypt$1024$8$1$${Buffer.alloc(4).toString('base64')}$${hash}`,
    ]) {
      expect(() => parseHash(bad)).toThrow(PasswordHashFormatError);
      try {
        parseHash(bad);
      } catch (error) {
        expect((error as Error).message).not.toContain(salt);
      }
    }
  });
});

describe('users file', () => {
  it('reads username:hash lines, skipping comments and blank lines', async () => {
    const file = await writeUsersFile([
      { username: 'alice', password: 'a' },
      { username: 'dr.nguyen@clinic', password: 'b' },
    ]);
    const dir = new UserDirectory({ file });
    await dir.load();
    expect(dir.size).toBe(2);
    expect(await dir.check('alice', 'a')).toBe('ok');
    expect(await dir.check('dr.nguyen@clinic', 'b')).toBe('ok');
    expect(await dir.check('alice', 'b')).toBe('bad_credentials');
    expect(await dir.check('nobody', 'a')).toBe('bad_credentials');
  });

  it('spends a full hash on an unknown user, as on a wrong password (no enumeration by timing)', async () => {
    const { writeFileSync } = await import('node:fs');
    const file = await writeUsersFile([]);
    writeFileSync(file, `alice:${await hashPassword('pw', { N: 2 ** 14, r: 8, p: 1 })}\n`);
    const dir = new UserDirectory({ file });
    await dir.load();
    const time = async (username: string): Promise<number> => {
      const started = performance.now();
      for (let i = 0; i < 3; i++) expect(await dir.check(username, 'wrong')).toBe('bad_credentials');
      return performance.now() - started;
    };
    const known = await time('alice');
    const unknown = await time('nobody');
    expect(known).toBeGreaterThan(30); // three scrypt runs at N=2^14
    expect(unknown).toBeGreaterThan(known * 0.5);
    expect(unknown).toBeLessThan(known * 3);
  });

  it('names the line of a problem, never its text', () => {
    const hash = 'scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA==$BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB=';
    expect(() => parseUsersFile(`# ok\nalice:${hash}\nalice:${hash}\n`, 'u.txt')).toThrow(
      'u.txt line 3: user alice is listed twice',
    );
    expect(() => parseUsersFile('no-colon-here\n', 'u.txt')).toThrow('line 1: expected username:hash');
    expect(() => parseUsersFile(`bad user:${hash}\n`, 'u.txt')).toThrow('line 1: the username must be');
    let message = '';
    try {
      parseUsersFile('alice:hunter2\n', 'u.txt');
    } catch (error) {
      expect(error).toBeInstanceOf(UsersFileError);
      message = (error as Error).message;
    }
    expect(message).toContain('line 1');
    expect(message).not.toContain('hunter2');
  });

  it('hashes the environment user at load and lets the file win on the same name', async () => {
    const file = await writeUsersFile([{ username: 'alice', password: 'from-file' }]);
    const dir = new UserDirectory({ file, envUser: { username: 'alice', password: 'from-env' } });
    await dir.load();
    expect(await dir.check('alice', 'from-file')).toBe('ok');
    expect(await dir.check('alice', 'from-env')).toBe('bad_credentials');
    const envOnly = new UserDirectory({ file: undefined, envUser: { username: 'carol', password: 'pw' } });
    expect(envOnly.ready).toBe(false);
    await envOnly.load();
    expect(envOnly.ready).toBe(true);
    expect(await envOnly.check('carol', 'pw')).toBe('ok');
  });

  it('re-reads the file when it changes, and keeps the users when it breaks', async () => {
    const file = await writeUsersFile([{ username: 'alice', password: 'one' }]);
    const dir = new UserDirectory({ file });
    await dir.load();
    await writeUsersFile(
      [
        { username: 'alice', password: 'two' },
        { username: 'dave', password: 'three' },
      ],
      file,
    );
    await dir.refresh();
    expect(await dir.check('alice', 'two')).toBe('ok');
    expect(await dir.check('dave', 'three')).toBe('ok');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, 'garbage line without a colon and longer than before\n');
    await expect(dir.refresh()).rejects.toThrow(UsersFileError);
    expect(await dir.check('alice', 'two')).toBe('ok');
  });
});

describe('sessions', () => {
  let counter = 0;
  const make = (options: { idleMs?: number; maxAgeMs?: number; maxSessions?: number } = {}) => {
    const ended: SessionEnd[] = [];
    const store = new SessionStore({
      idleMs: options.idleMs ?? 1000,
      maxAgeMs: options.maxAgeMs ?? 10_000,
      maxSessions: options.maxSessions ?? 100,
      newId: () => String(++counter).padStart(43, 'x'),
      digest: (id) => `h:${id}`,
      onEnd: (reason) => ended.push(reason),
    });
    return { store, ended };
  };

  it('finds a session by its id, touches it, and ends it after the idle time', () => {
    const { store, ended } = make();
    const { id } = store.create('alice', 0);
    expect(store.get(id, 900)?.user).toBe('alice');
    expect(store.get(id, 1800)?.user).toBe('alice'); // touched at 900
    expect(store.get(id, 2800)).toBeUndefined();
    expect(ended).toEqual(['expired']);
  });

  it('ends a session at its absolute age however often it is used', () => {
    const { store } = make({ idleMs: 1000, maxAgeMs: 2500 });
    const { id } = store.create('alice', 0);
    for (const t of [500, 1000, 1500, 2000]) expect(store.get(id, t)).toBeDefined();
    expect(store.get(id, 2500)).toBeUndefined();
  });

  it('treats malformed, unknown and forged ids as no session', () => {
    const { store } = make();
    store.create('alice', 0);
    expect(store.get(undefined, 1)).toBeUndefined();
    expect(store.get('short', 1)).toBeUndefined();
    expect(store.get('y'.repeat(43), 1)).toBeUndefined();
    expect(SESSION_ID.test('a'.repeat(43))).toBe(true);
  });

  it('rotates: the session named by the old cookie ends at sign-in', () => {
    const { store, ended } = make();
    const first = store.create('alice', 0);
    const second = store.create('alice', 10, first.id);
    expect(second.id).not.toBe(first.id);
    expect(store.get(first.id, 20)).toBeUndefined();
    expect(store.get(second.id, 20)?.user).toBe('alice');
    expect(ended).toEqual(['rotated']);
    expect(store.destroy(second.id)).toBe(true);
    expect(store.destroy(second.id)).toBe(false);
    expect(ended).toEqual(['rotated', 'signed_out']);
  });

  it('holds at most maxSessions, ending the least recently used', () => {
    const { store, ended } = make({ maxSessions: 2 });
    const a = store.create('a', 0);
    const b = store.create('b', 1);
    store.get(a.id, 2); // a is now more recent than b
    const c = store.create('c', 3);
    expect(store.size).toBe(2);
    expect(store.get(b.id, 4)).toBeUndefined();
    expect(store.get(a.id, 4)?.user).toBe('a');
    expect(store.get(c.id, 4)?.user).toBe('c');
    expect(ended).toEqual(['evicted']);
  });
});

describe('sign-in failure window', () => {
  it('blocks a key after maxFailures within the window until the oldest leaves it', () => {
    const w = new FailureWindow({ maxFailures: 3, windowMs: 1000, maxKeys: 10 });
    for (const t of [0, 100, 200]) {
      expect(w.blockedFor('k', t)).toBe(0);
      w.fail('k', t);
    }
    expect(w.blockedFor('k', 300)).toBe(700);
    expect(w.blockedFor('other', 300)).toBe(0);
    expect(w.blockedFor('k', 1000)).toBe(0); // the failure at 0 has left the window
    w.fail('k', 1000);
    expect(w.blockedFor('k', 1050)).toBe(50); // 100 + 1000 - 1050
    w.succeed('k');
    expect(w.blockedFor('k', 1050)).toBe(0);
  });

  it('counts tries in progress until they end, and only failed ones after', () => {
    const w = new FailureWindow({ maxFailures: 2, windowMs: 1000, maxKeys: 10 });
    expect(w.begin('k', 0)).toBe(0);
    expect(w.begin('k', 0)).toBe(0);
    expect(w.begin('k', 0)).toBe(1000); // two in progress fill the window: nothing started
    w.end('k', 10, false);
    expect(w.begin('k', 20)).toBe(0);
    w.end('k', 30, true);
    w.end('k', 40, true);
    expect(w.blockedFor('k', 50)).toBe(980); // the failure at 30 leaves at 1030
    expect(w.blockedFor('other', 50)).toBe(0);
  });

  it('forgets the oldest keys past maxKeys', () => {
    const w = new FailureWindow({ maxFailures: 1, windowMs: 1000, maxKeys: 2 });
    w.fail('a', 0);
    w.fail('b', 0);
    w.fail('c', 0);
    expect(w.size).toBe(2);
    expect(w.blockedFor('a', 1)).toBe(0);
    expect(w.blockedFor('c', 1)).toBeGreaterThan(0);
  });
});

describe('origin check', () => {
  const own = 'http://proxy.local:8005';
  const check = (origin?: string, secFetchSite?: string, allowed: string[] = []) =>
    checkOrigin({ origin, secFetchSite, ownOrigin: own, allowed });

  it('lets same-origin, allowed and header-less requests through', () => {
    expect(check('http://proxy.local:8005').ok).toBe(true);
    expect(check('HTTP://PROXY.LOCAL:8005').ok).toBe(true);
    expect(check('https://emr.example.org', undefined, ['https://emr.example.org']).ok).toBe(true);
    expect(check(undefined, undefined).ok).toBe(true);
    expect(check(undefined, 'same-origin').ok).toBe(true);
    expect(check(undefined, 'none').ok).toBe(true);
  });

  it('refuses other origins, null, and cross-site fetches without Origin', () => {
    expect(check('http://evil.example').ok).toBe(false);
    expect(check('http://proxy.local:8006').ok).toBe(false);
    expect(check('https://proxy.local:8005').ok).toBe(false);
    expect(check('null').ok).toBe(false);
    expect(check(undefined, 'cross-site').ok).toBe(false);
    const verdict = check('http://evil.example');
    expect(verdict.ok ? '' : verdict.reason).toContain('http://evil.example');
  });
});

describe('action fields', () => {
  const parse = (fields: Record<string, unknown>) => parseAction(fields, LIMITS);
  const message = (fields: Record<string, unknown>): string => {
    try {
      parse(fields);
    } catch (error) {
      expect(error).toBeInstanceOf(BadRequestError);
      return (error as Error).message;
    }
    throw new Error('no error');
  };

  it('lists the valid actions for a missing or unknown one', () => {
    for (const fields of [{}, { action: '' }, { action: 'drop_tables' }, { action: 'STATUS' }]) {
      const m = message(fields);
      for (const action of ACTIONS) expect(m).toContain(action);
    }
    expect(message({ action: 'drop_tables' })).toMatch(/^unknown action/);
    expect(message({})).toMatch(/^missing action/);
    expect(message({ action: ['status', 'chat'] })).toBe('action: given more than once');
  });

  it('reads every action with defaults', () => {
    expect(parse({ action: 'status' })).toEqual({ action: 'status' });
    expect(parse({ action: 'list_tasks' })).toEqual({ action: 'list_tasks', status: undefined, limit: 50 });
    expect(parse({ action: 'list_tasks', status: 'in_progress', limit: '7' })).toEqual({
      action: 'list_tasks',
      status: 'running',
      limit: 7,
    });
    expect(parse({ action: 'list_tasks', status: 'ALL' })).toMatchObject({ status: undefined });
    expect(parse({ action: 'list_tasks', limit: 100_000 })).toMatchObject({ limit: 500 }); // lowered to the max
    expect(parse({ action: 'get_task', task_id: 12 })).toEqual({ action: 'get_task', taskId: 12 });
    expect(parse({ action: 'get_task_logs' })).toEqual({
      action: 'get_task_logs',
      taskId: undefined,
      limit: 100,
    });
    expect(parse({ action: 'get_runs', task_id: '3' })).toEqual({ action: 'get_runs', taskId: 3, limit: 50 });
    expect(parse({ action: 'create_task', title: '  Review labs ' })).toEqual({
      action: 'create_task',
      title: 'Review labs',
      description: '',
      priority: 5,
    });
    expect(parse({ action: 'create_task', name: 'By name', priority: 'URGENT' })).toMatchObject({
      title: 'By name',
      priority: 10,
    });
    expect(parse({ action: 'create_task', title: 't', priority: '1' })).toMatchObject({ priority: 1 });
    expect(parse({ action: 'chat', message: ' hi ' })).toEqual({
      action: 'chat',
      message: 'hi',
      sessionId: undefined,
    });
    expect(parse({ action: 'clear_history', session_id: 'abc-1' })).toEqual({
      action: 'clear_history',
      sessionId: 'abc-1',
    });
  });

  it('answers 400 naming the field for bad values', () => {
    expect(message({ action: 'get_task' })).toMatch(/^task_id: is required/);
    expect(message({ action: 'get_task', task_id: 'abc' })).toMatch(/^task_id: must be a task id/);
    expect(message({ action: 'cancel_task', task_id: '1.5' })).toMatch(/^task_id:/);
    expect(message({ action: 'get_task', task_id: '0' })).toMatch(/^task_id:/);
    expect(message({ action: 'get_runs', task_id: '-2' })).toMatch(/^task_id:/);
    expect(message({ action: 'list_tasks', limit: '0' })).toMatch(
      /^limit: must be a whole number from 1 to 500/,
    );
    expect(message({ action: 'get_task_logs', limit: 'ten' })).toMatch(/^limit:/);
    expect(message({ action: 'list_tasks', status: 'finished' })).toMatch(/^status: .*pending, queued/);
    expect(message({ action: 'create_task' })).toMatch(/^title: is required/);
    expect(message({ action: 'create_task', title: '   ' })).toMatch(/^title: is required/);
    expect(message({ action: 'create_task', title: 'x'.repeat(21) })).toMatch(/^title: must be at most 20/);
    expect(message({ action: 'create_task', title: 't', description: 'd'.repeat(51) })).toMatch(
      /^description:/,
    );
    expect(message({ action: 'create_task', title: 't', priority: '11' })).toMatch(
      /^priority: .*1 to 10.*urgent/,
    );
    expect(message({ action: 'create_task', title: 't', priority: 'asap' })).toMatch(/^priority:/);
    expect(message({ action: 'create_task', title: 't', priority: 0 })).toMatch(/^priority:/);
    expect(message({ action: 'chat' })).toMatch(/^message: is required/);
    expect(message({ action: 'chat', message: 'x'.repeat(101) })).toMatch(/^message: must be at most 100/);
    expect(message({ action: 'chat', message: 'hi', session_id: 'bad id!' })).toMatch(/^session_id:/);
    expect(message({ action: 'clear_history' })).toMatch(/^session_id: is required/);
    expect(message({ action: 'get_task', task_id: ['1', '2'] })).toMatch(/^task_id: given more than once/);
    // The agent's store can not keep a NUL character (PostgreSQL text): refused before any work.
    const nul = /must not contain NUL characters \(\\u0000\)$/;
    expect(message({ action: 'create_task', title: 'bad\u0000title' })).toMatch(/^title: /);
    expect(message({ action: 'create_task', title: 'bad\u0000title' })).toMatch(nul);
    expect(message({ action: 'create_task', name: 'by name\u0000' })).toMatch(/^name: .*NUL/);
    expect(message({ action: 'create_task', title: 't', description: 'pt\u0000x' })).toMatch(
      /^description: .*NUL/,
    );
    expect(message({ action: 'chat', message: 'hi\u0000' })).toMatch(/^message: .*NUL/);
  });
});

describe('clientAddress (per-address sign-in key)', () => {
  const peer = '10.1.2.3';
  it('is the peer without X-Forwarded-For', () => {
    expect(clientAddress({ ip: peer, peer, forwardedFor: undefined })).toEqual({
      key: peer,
      untrustedForward: false,
    });
  });
  it('is what Express resolved when TRUST_PROXY let it read the header', () => {
    expect(clientAddress({ ip: '198.51.100.7', peer, forwardedFor: '198.51.100.7' })).toEqual({
      key: '198.51.100.7',
      untrustedForward: false,
    });
  });
  it('adds the address the nearest proxy forwarded when the header was not trusted', () => {
    expect(clientAddress({ ip: peer, peer, forwardedFor: '192.0.2.1, 198.51.100.7' })).toEqual({
      key: `${peer} for 198.51.100.7`,
      untrustedForward: true,
    });
    expect(clientAddress({ ip: peer, peer, forwardedFor: ['192.0.2.1', '2001:db8::7'] }).key).toBe(
      `${peer} for 2001:db8::7`,
    );
  });
  it('ignores a forwarded value that is no address (the peer alone)', () => {
    expect(clientAddress({ ip: peer, peer, forwardedFor: 'evil, not-an-ip' })).toEqual({
      key: peer,
      untrustedForward: true,
    });
    expect(clientAddress({ ip: peer, peer, forwardedFor: `1.2.3.4, ${'9'.repeat(5000)}` }).key).toBe(peer);
  });
});
