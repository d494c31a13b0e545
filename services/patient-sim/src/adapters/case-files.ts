import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, formatLoc } from '@clinicalsuite/kit';
import type { PatientSimConfig } from '../config.js';
import type { PlayableCase } from '../routes/runtime.js';
import { CaseSchema, type CaseFile } from '../schemas/case.js';

/**
 * Reads the case files (`*.json`) of one or more directories and validates every one. All problems
 * of all files are collected, so a user fixing their cases sees every mistake in one start-up.
 */

export class CaseFileError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`Invalid case files:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'CaseFileError';
    this.problems = problems;
  }
}

export interface LoadedCase {
  readonly file: string;
  readonly case: CaseFile;
}

export function readCaseDirectory(dir: string): { cases: LoadedCase[]; problems: string[] } {
  const problems: string[] = [];
  const cases: LoadedCase[] = [];
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) return { cases, problems: [`${dir}: is not a directory`] };
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort();
  } catch (error) {
    return {
      cases,
      problems: [`${dir}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`],
    };
  }
  for (const name of names) {
    const file = join(dir, name);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      problems.push(`${file}: not valid JSON (${(error as Error).message})`);
      continue;
    }
    const parsed = CaseSchema.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues.slice(0, 20)) {
        const at = formatLoc(issue.path.map((p) => (typeof p === 'number' ? p : String(p))));
        problems.push(`${file}: ${at === '' ? '(root)' : at}: ${issue.message}`);
      }
      if (parsed.error.issues.length > 20)
        problems.push(`${file}: and ${parsed.error.issues.length - 20} more problems`);
      continue;
    }
    cases.push({ file, case: parsed.data });
  }
  return { cases, problems };
}

/** Every case of the directories, by id; throws CaseFileError listing every problem. */
export function loadCases(dirs: readonly string[]): ReadonlyMap<string, LoadedCase> {
  const problems: string[] = [];
  const byId = new Map<string, LoadedCase>();
  for (const dir of dirs) {
    const read = readCaseDirectory(dir);
    problems.push(...read.problems);
    for (const loaded of read.cases) {
      const other = byId.get(loaded.case.id);
      if (other !== undefined) {
        problems.push(`${loaded.file}: case id "${loaded.case.id}" is also used by ${other.file}`);
        continue;
      }
      byId.set(loaded.case.id, loaded);
    }
  }
  if (problems.length === 0 && byId.size === 0) problems.push(`no case files (*.json) in ${dirs.join(', ')}`);
  if (problems.length > 0) throw new CaseFileError(problems);
  return byId;
}

/**
 * The configured cases (the built-in ones unless turned off, then PATIENT_CASES_DIR's), each with
 * where it comes from. A bad case file is a configuration error: the start stops with every
 * problem named.
 */
export function readCases(config: PatientSimConfig): ReadonlyMap<string, PlayableCase> {
  const dirs = [
    ...(config.PATIENT_SIM_BUILTIN_CASES ? [config.builtinCasesDir] : []),
    ...(config.PATIENT_CASES_DIR === undefined ? [] : [config.PATIENT_CASES_DIR]),
  ];
  try {
    const loaded = loadCases(dirs);
    return new Map(
      [...loaded].map(([id, l]) => [
        id,
        {
          case: l.case,
          file: l.file,
          origin:
            l.file.startsWith(config.builtinCasesDir) && config.PATIENT_SIM_BUILTIN_CASES
              ? 'builtin'
              : 'user',
        },
      ]),
    );
  } catch (error) {
    if (error instanceof CaseFileError)
      throw new ConfigError(error.problems.map((p) => `PATIENT_CASES_DIR / case file ${p}`));
    throw error;
  }
}
