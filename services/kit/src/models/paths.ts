/** Where models live: `<home>/models`, home being `$CLINICALSUITE_HOME` or `~/.cache/clinicalsuite`. */
import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { SourceEnv } from './sources.js';

export function defaultHome(env: SourceEnv = process.env): string {
  return env['CLINICALSUITE_HOME'] || join(homedir(), '.cache', 'clinicalsuite');
}

export function defaultModelsDir(env: SourceEnv = process.env): string {
  return join(defaultHome(env), 'models');
}

/** The absolute path of an entry's file; refuses a `file` that would leave the models directory. */
export function resolveModelPath(modelsDir: string, entry: { readonly file: string }): string {
  const root = resolve(modelsDir);
  const path = resolve(root, entry.file);
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    throw new Error(`model file "${entry.file}" is not inside the models directory ${root}`);
  }
  return path;
}
