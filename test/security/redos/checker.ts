import recheck from 'recheck';
import type { Diagnostics } from 'recheck';
import { lower, parse, split } from './lower.js';

/**
 * ReDoS verdicts from recheck's automaton checker (see lower.ts for what it is asked): exact and
 * deterministic, no fuzzing and no clock in the verdict. Only the time limit per check is a clock;
 * a check that passes it is a failure, never a pass.
 *
 * recheck runs as its native binary (the `recheck-linux-x64`... optional package, one process for
 * all checks) when installed, else as its JVM jar or its JavaScript build in a worker thread: the
 * verdicts are the same, only slower.
 */

export interface Verdict {
  readonly safe: boolean;
  /** What recheck said (complexity, or why there is no verdict). */
  readonly detail: string;
  /** An input that makes the analysed pattern slow (recheck's attack string), when unsafe. */
  readonly attack?: string;
}

/** Longest a single check may take (a check that does not finish is a failure). */
export const CHECK_TIMEOUT_MS = 20_000;
/** Checks in flight at once (the native checker answers them in parallel). */
const CONCURRENCY = 2;

async function automaton(source: string, flags: string): Promise<Diagnostics> {
  return recheck.check(source, flags, { checker: 'automaton', timeout: CHECK_TIMEOUT_MS });
}

function describe(d: Diagnostics): Verdict {
  switch (d.status) {
    case 'safe':
      return { safe: true, detail: d.complexity.summary };
    case 'vulnerable':
      return { safe: false, detail: d.complexity.summary, attack: d.attack.pattern };
    default:
      return {
        safe: false,
        detail: `no verdict (${d.error.kind}${'message' in d.error ? `: ${d.error.message}` : ''})`,
      };
  }
}

/**
 * The verdict for one regex: its top-level alternatives one by one (the search of `A|B` does at
 * most what the searches of `A` and of `B` do together), each lowered (lower.ts) and checked as its
 * full search, piece by piece; one that needed no erasure and whose full search is not linear is
 * checked again as it is.
 */
export async function checkRegex(source: string, flags: string): Promise<Verdict> {
  let alternatives: string[];
  try {
    alternatives = parse(source, flags).alternatives.map((a) => a.raw);
  } catch (error) {
    return { safe: false, detail: `not a valid regex: ${(error as Error).message}` };
  }
  for (const alternative of alternatives) {
    const v = await checkAlternative(alternative, flags);
    if (!v.safe) return v;
  }
  return { safe: true, detail: 'linear' };
}

async function checkAlternative(source: string, flags: string): Promise<Verdict> {
  const lowered = lower(source, flags);
  if ('error' in lowered) return { safe: false, detail: `cannot be analysed: ${lowered.error}` };
  let full: Verdict = { safe: true, detail: 'linear' };
  for (const piece of split(lowered.source, lowered.flags)) {
    const v = describe(await automaton(`(?:${piece})$^`, lowered.flags));
    if (!v.safe) {
      full = v;
      break;
    }
  }
  if (full.safe || lowered.erased) return full;
  const exact = describe(await automaton(lowered.source, lowered.flags));
  return exact.safe ? exact : full;
}

/** Verdicts for many regexes, each distinct (source, flags) checked once. */
export async function checkAll(
  regexes: readonly { readonly source: string; readonly flags: string }[],
): Promise<Map<string, Verdict>> {
  const key = (r: { source: string; flags: string }): string => `/${r.source}/${r.flags}`;
  const todo = [...new Map(regexes.map((r) => [key(r), r])).values()];
  const verdicts = new Map<string, Verdict>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < todo.length) {
      const r = todo[next++]!;
      verdicts.set(key(r), await checkRegex(r.source, r.flags));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return verdicts;
}

export const regexKey = (r: { readonly source: string; readonly flags: string }): string =>
  `/${r.source}/${r.flags}`;
