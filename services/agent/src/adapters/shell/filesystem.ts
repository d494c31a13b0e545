import { constants, promises as fs, statSync, type Stats } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';

/**
 * The shell's contact with the filesystem: the root directory, a request's working directory (real
 * path checked inside the root), and programs resolved on the fixed PATH.
 */

/** The only PATH commands see, and the only directories programs are resolved from. */
export const SHELL_PATH = ['/usr/local/bin', '/usr/bin', '/bin'] as const;

/** Creates the root when missing (mode 0755: the unprivileged user reads it, cannot write it); its real path. */
export async function prepareRoot(root: string): Promise<string> {
  await fs.mkdir(root, { recursive: true, mode: 0o755 });
  return fs.realpath(root);
}

export type WorkdirResult =
  | { readonly ok: true; readonly path: string }
  | { readonly ok: false; readonly reason: 'missing' | 'outside' | 'not_directory' };

/** `relative` (already checked lexically) under `realRoot`, after resolving symbolic links. */
export async function resolveWorkdir(realRoot: string, relative: string): Promise<WorkdirResult> {
  let real: string;
  try {
    real = await fs.realpath(join(realRoot, relative));
  } catch {
    return { ok: false, reason: 'missing' };
  }
  if (real !== realRoot && !real.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep)) {
    return { ok: false, reason: 'outside' };
  }
  const stat = await fs.stat(real);
  if (!stat.isDirectory()) return { ok: false, reason: 'not_directory' };
  return { ok: true, path: real };
}

export interface ResolvedProgram {
  /** The path executed (on SHELL_PATH). */
  readonly path: string;
  /** The file it really is, after symbolic links (e.g. /usr/bin/awk -> /usr/bin/mawk). */
  readonly real: string;
}

/** The first executable regular file named `name` on SHELL_PATH, or undefined. */
export async function resolveProgram(name: string): Promise<ResolvedProgram | undefined> {
  for (const dir of SHELL_PATH) {
    const path = join(dir, name);
    try {
      const stat = await fs.stat(path);
      if (!stat.isFile()) continue;
      await fs.access(path, constants.X_OK);
      const real = await fs.realpath(path);
      return { path, real };
    } catch {
      continue;
    }
  }
  return undefined;
}

export function programName(path: string): string {
  return basename(path);
}

/**
 * Whether `uid`/`gid` may enter `dir` and every directory above it (by the mode bits; ACLs aside):
 * a root under a 0700 home would make every command fail on its own working directory.
 */
export function traversableBy(dir: string, uid: number, gid: number): boolean {
  if (uid === 0) return true;
  let current = dir;
  for (;;) {
    let st: Stats | undefined;
    try {
      st = statSync(current);
    } catch {
      st = undefined; // not created yet: it will be made 0755
    }
    if (st !== undefined) {
      const bits = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
      if ((st.mode & bits) === 0) return false;
    }
    const parent = dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}
