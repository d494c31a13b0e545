import { readFile, stat } from 'node:fs/promises';
import type { ResourceSpec } from '@clinicalsuite/kit';
import type { TaskProxyConfig } from '../config.js';
import {
  DEFAULT_SCRYPT,
  decoyHash,
  hashPassword,
  parseHash,
  PasswordHashFormatError,
  verifyPassword,
  type PasswordHash,
} from './passwords.js';

/**
 * Who may sign in: the lines of TASK_PROXY_USERS_FILE (`username:scrypt$…`, `#` comments and blank
 * lines allowed; a mounted Secret, re-read when it changes) and the user of TASK_PROXY_USER /
 * TASK_PROXY_PASSWORD, whose password is hashed once at start and not kept. A line of the file wins
 * over the environment's user of the same name.
 */

export const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

export class UsersFileError extends Error {}

export interface UserDirectoryOptions {
  readonly file: string | undefined;
  readonly envUser?: { readonly username: string; readonly password: string } | undefined;
}

interface FileStamp {
  readonly mtimeMs: number;
  readonly size: number;
  readonly ino: number;
}

export type CheckResult = 'ok' | 'bad_credentials';

export class UserDirectory {
  private fileUsers = new Map<string, PasswordHash>();
  private envUser: { readonly username: string; readonly hash: PasswordHash } | undefined;
  private stamp: FileStamp | undefined;
  private loaded = false;
  private decoy: PasswordHash = decoyHash(DEFAULT_SCRYPT);
  private pendingPassword: { readonly username: string; readonly password: string } | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(private readonly options: UserDirectoryOptions) {
    this.pendingPassword = options.envUser;
  }

  /** Whether the users have been read at least once. */
  get ready(): boolean {
    return this.loaded;
  }

  get size(): number {
    return this.all().size;
  }

  /**
   * Hashes the environment's password (then drops it) and reads the file. Throws UsersFileError
   * naming the file and line of a problem (never the line's text: it holds a hash).
   */
  async load(): Promise<void> {
    if (this.pendingPassword !== undefined) {
      const { username, password } = this.pendingPassword;
      this.envUser = { username, hash: parseHash(await hashPassword(password)) };
      this.pendingPassword = undefined;
    }
    await this.refresh();
  }

  /** Re-reads the file when it changed since the last read (one read at a time). */
  refresh(): Promise<void> {
    this.refreshing ??= this.readIfChanged().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /**
   * Checks a username and password. An unknown user is checked against a decoy hash of the same
   * cost as the known ones, so both answers take as long.
   */
  async check(username: string, password: string): Promise<CheckResult> {
    const stored = this.all().get(username);
    const matches = await verifyPassword(password, stored ?? this.decoy);
    return stored !== undefined && matches ? 'ok' : 'bad_credentials';
  }

  private all(): Map<string, PasswordHash> {
    const users = new Map(this.fileUsers);
    if (this.envUser !== undefined && !users.has(this.envUser.username))
      users.set(this.envUser.username, this.envUser.hash);
    return users;
  }

  private async readIfChanged(): Promise<void> {
    const file = this.options.file;
    if (file === undefined) {
      this.settle();
      return;
    }
    let current: FileStamp;
    try {
      const s = await stat(file);
      current = { mtimeMs: s.mtimeMs, size: s.size, ino: s.ino };
    } catch (error) {
      throw new UsersFileError(`cannot read TASK_PROXY_USERS_FILE ${file}: ${(error as Error).message}`);
    }
    const previous = this.stamp;
    if (
      previous !== undefined &&
      previous.mtimeMs === current.mtimeMs &&
      previous.size === current.size &&
      previous.ino === current.ino
    )
      return;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new UsersFileError(`cannot read TASK_PROXY_USERS_FILE ${file}: ${(error as Error).message}`);
    }
    this.fileUsers = parseUsersFile(text, file);
    this.stamp = current;
    this.settle();
  }

  private settle(): void {
    this.loaded = true;
    // The decoy costs what a real check costs: the parameters of the first user's hash.
    const first = this.all().values().next();
    const params = first.done === true ? DEFAULT_SCRYPT : first.value.params;
    if (JSON.stringify(params) !== JSON.stringify(this.decoy.params)) this.decoy = decoyHash(params);
  }
}

/** TASK_PROXY_USERS_FILE, and TASK_PROXY_USER with its password (given apart from the config). */
export function userDirectoryOptions(
  config: TaskProxyConfig,
  password: string | undefined,
): UserDirectoryOptions {
  return {
    file: config.TASK_PROXY_USERS_FILE,
    envUser:
      config.TASK_PROXY_USER === undefined || password === undefined
        ? undefined
        : { username: config.TASK_PROXY_USER, password },
  };
}

/**
 * The users as a kit resource: loaded once the server listens (hashing the environment's
 * password), which makes the proxy ready; a users file that cannot be read leaves it not ready with
 * the reason, tried again every `retryMs`.
 */
export function usersResource(users: UserDirectory, retryMs: number): ResourceSpec<UserDirectory> {
  return {
    name: 'the users',
    startingReason: 'starting: the users have not been loaded yet',
    open: async () => {
      await users.load();
      return users;
    },
    retry: { firstPauseMs: retryMs, maxPauseMs: retryMs },
    failureReason: (error) => `users not loaded: ${error.message}`,
    describe: (loaded) => ({ fields: { users: loaded.size } }),
  };
}

/** `username:hash` lines; problems name the line number, never its text. */
export function parseUsersFile(text: string, file: string): Map<string, PasswordHash> {
  const users = new Map<string, PasswordHash>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `TASK_PROXY_USERS_FILE ${file} line ${index + 1}`;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new UsersFileError(`${where}: expected username:hash`);
    const username = line.slice(0, colon);
    if (!USERNAME.test(username))
      throw new UsersFileError(
        `${where}: the username must be letters, digits, ".", "_", "@", "-" (at most 64)`,
      );
    if (users.has(username)) throw new UsersFileError(`${where}: user ${username} is listed twice`);
    try {
      users.set(username, parseHash(line.slice(colon + 1).trim()));
    } catch (error) {
      if (error instanceof PasswordHashFormatError) throw new UsersFileError(`${where}: ${error.message}`);
      throw error;
    }
  });
  return users;
}
