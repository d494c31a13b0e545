import { posix } from 'node:path';
import { checkCharacters } from './characters.js';
import { accept, quote, refuse, type Checked } from './refusal.js';

/**
 * The request's `workdir`, read against the shell root (SHELL_WORKDIR): null is the root itself; a
 * relative path is taken from the root; an absolute path must lie inside the root. The answer is the
 * path relative to the root (`.` for the root). `root` must be absolute. Lexical only: the adapter resolves symbolic links
 * and checks the real path again.
 */
export function relativeWorkdir(root: string, workdir: string | null): Checked<string> {
  if (workdir === null || workdir === '' || workdir === '.') return accept('.');
  const bad = checkCharacters(workdir);
  if (bad !== undefined) return { ok: false, refusal: bad };
  const target = posix.resolve(root, workdir);
  const relative = posix.relative(root, target);
  if (relative === '') return accept('.');
  if (relative === '..' || relative.startsWith('../') || posix.isAbsolute(relative)) {
    return refuse('workdir_outside', `The workdir ${quote(workdir)} is outside the shell's root directory`);
  }
  return accept(relative);
}
