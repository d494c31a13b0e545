import { relative, sep } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { checkAll, checkRegex, regexKey, type Verdict } from './redos/checker.js';
import { scanServices, type DynamicRegex, type StaticRegex } from './redos/sites.js';

/**
 * No regex in the services can backtrack catastrophically (issue 28): every regex literal, every
 * `new RegExp`/`RegExp` and every string a string method turns into a regex, in
 * `services/<name>/src`, found with the TypeScript parser (redos/sites.ts), is analysed by recheck
 * (redos/checker.ts, redos/lower.ts) and must be reported safe: linear in the input's length.
 * Patterns built at run time (keyword tables turned into alternations) are checked as the RegExp
 * objects the code really builds, recorded while their modules load; each such constructor must be
 * listed below with why its instances are all there is.
 */

const ROOT = new URL('../../', import.meta.url).pathname;

/** A regex's place in the report. */
const where = (file: string, line: number): string => `${file}:${line}`;

function report(
  failures: readonly {
    readonly at: string;
    readonly source: string;
    readonly flags: string;
    readonly verdict: Verdict;
  }[],
): string {
  return failures
    .map(
      (f) =>
        `${f.at}: /${f.source.length > 160 ? `${f.source.slice(0, 157)}...` : f.source}/${f.flags} is not safe: ${f.verdict.detail}` +
        (f.verdict.attack === undefined ? '' : `; attack: ${f.verdict.attack}`),
    )
    .join('\n');
}

describe('the ReDoS check', () => {
  // Patterns that must fail, each for a reason the check has to see through.
  const UNSAFE: readonly (readonly [string, string, string])[] = [
    // The agent's shell rule before issue 28: a path argument as two runs around one of / . * ~.
    [
      'the old any.bare-command rule (exponential)',
      String.raw`^\s*(?:sudo\s+)?(?:ls|df|du|pwd|uname|uptime|free|nvidia-smi|whoami|date|ps|top|hostname)(?:\s+(?:-{1,2}[\w=-]+|[\w~.*-]*[/.*~][\w~./*-]*|\d+))*\s*$`,
      '',
    ],
    // Its first fix still read an option such as `--s` two ways (`-` `-s` or `--` `s`).
    [
      'options of one or two dashes then dashes (exponential)',
      String.raw`^ls(?:\s+(?:-{1,2}[\w=-]+|\d+))*\s*$`,
      '',
    ],
    ['nested quantifiers', '^(?:a+)+$', ''],
    // Quadratic: tried at every slash of a long run.
    ['a trailing run', String.raw`\/+$`, ''],
    // Exponential across a lookahead. Without the lookahead the pattern matches at once (a search
    // that stops at its first match is linear): only the full search shows the blow-up.
    ['a blow-up across a lookahead', String.raw`(?:a|a)*(?=b)\w`, ''],
    // Quadratic behind a lookbehind that does not stop it.
    ['a run after a lookbehind', '(?<!x)b+c', ''],
    ['two overlapping runs under the m flag', String.raw`^\s*\S*\s*$`, 'm'],
    ['a lookahead that reads without bound', String.raw`\n(?![ \t]*-)`, ''],
  ];
  it.each(UNSAFE)('reports %s as unsafe', async (_name, source, flags) => {
    const verdict = await checkRegex(source, flags);
    expect(verdict.safe).toBe(false);
  });

  const SAFE: readonly (readonly [string, string])[] = [
    [String.raw`\s+`, 'g'],
    [String.raw`^\s*(?:sudo\s+)?(?:ls|df)(?:\s+(?:-[\w=-]+|[\w-]*[/.*~][\w~./*-]*|\d+))*\s*$`, ''],
    // Starts only where a word starts: linear although the run backtracks.
    [String.raw`\b\w{3,}ectomy\b`, ''],
    [String.raw`(?<![\p{L}\p{N}])\d+(?:[.,]\d+)?(?![\p{L}])`, 'gu'],
    [
      String.raw`(?:(?<=[\p{L}\p{N}_])(?![\p{L}\p{N}_])|(?<![\p{L}\p{N}_])(?=[\p{L}\p{N}_]))(?:s[ốo]t|[đd]au)(?:(?<=[\p{L}\p{N}_])(?![\p{L}\p{N}_])|(?<![\p{L}\p{N}_])(?=[\p{L}\p{N}_])).{1,60}(?:(?<=[\p{L}\p{N}_])(?![\p{L}\p{N}_])|(?<![\p{L}\p{N}_])(?=[\p{L}\p{N}_]))(?:ho|ngứa)`,
      'u',
    ],
  ];
  it.each(SAFE)('reports /%s/%s as safe', async (source, flags) => {
    const verdict = await checkRegex(source, flags);
    expect(verdict).toEqual(expect.objectContaining({ safe: true }));
  });
});

const sites = scanServices(ROOT);
const statics = sites.filter((s): s is StaticRegex => s.kind === 'static');
const dynamics = sites.filter((s): s is DynamicRegex => s.kind === 'dynamic');
const siteKey = (file: string, enclosing: string | null): string => `${file}#${enclosing ?? '<module>'}`;

/**
 * The constructors whose pattern is built at run time, by file and the function they are called in
 * (`<module>`: at load). `load` imports the module (and runs what builds patterns lazily), so that
 * every RegExp the site builds is built while the test records them.
 */
const BUILT_AT_RUN_TIME: Readonly<
  Record<string, { readonly why: string; readonly load: () => Promise<unknown> }>
> = {
  'services/agent/src/domain/intent/rules.ts#compileStrict': {
    why: 'the strict form of each keyword pattern of patterns.ts, compiled once at load',
    load: () => import('../../services/agent/src/domain/intent/rules.js'),
  },
  'services/agent/src/domain/intent/rules.ts#compile': {
    why: 'every keyword pattern and feature of patterns.ts, folded, compiled once at load',
    load: () => import('../../services/agent/src/domain/intent/rules.js'),
  },
  'services/agent/src/domain/intent/translate-target.ts#pattern': {
    why: 'the target-language forms, built at load from the language-name tables',
    load: () => import('../../services/agent/src/domain/intent/translate-target.js'),
  },
  'services/agent/src/domain/shell/denylist.ts#re': {
    why: 'the denylist rules with Unicode word boundaries substituted, compiled once at load',
    load: () => import('../../services/agent/src/domain/shell/denylist.js'),
  },
  'services/reasoning/src/extract/rule-tables.ts#u': {
    why: 'the unit table, compiled once at load',
    load: () => import('../../services/reasoning/src/extract/rule-tables.js'),
  },
  'services/reasoning/src/extract/rules.ts#labelPattern': {
    why: 'each label table as escaped literal words joined by |, built on first use: one pass builds them all',
    load: async () => {
      const rules = await import('../../services/reasoning/src/extract/rules.js');
      return rules.extractMeasurements('Mạch 80 l/p, HA 120/80 mmHg, nhiệt độ 37 độ, SpO2 98%.');
    },
  },
  'services/reasoning/src/extract/rules.ts#<module>': {
    why: 'a separator or one of the filler words between a label and its value, built at load',
    load: () => import('../../services/reasoning/src/extract/rules.js'),
  },
  'services/reasoning/src/extract/demographics.ts#<module>': {
    why: 'durations: the number words and time units as alternations, built at load',
    load: () => import('../../services/reasoning/src/extract/demographics.js'),
  },
};

describe('every regex in services/*/src', () => {
  it('finds them with the TypeScript parser', () => {
    // A sanity floor: the scan reads every service (hundreds of regexes), the agent's rules included.
    expect(statics.length).toBeGreaterThan(250);
    expect(new Set(sites.map((s) => s.file.split(sep)[1])).size).toBeGreaterThanOrEqual(10);
    expect(dynamics.map((d) => siteKey(d.file, d.enclosing))).toContain(
      'services/agent/src/domain/intent/rules.ts#compile',
    );
  });

  it('is safe where the code states the pattern', async () => {
    const verdicts = await checkAll(statics);
    const failures = statics
      .map((s) => ({
        at: where(s.file, s.line),
        source: s.source,
        flags: s.flags,
        verdict: verdicts.get(regexKey(s))!,
      }))
      .filter((f) => !f.verdict.safe);
    if (failures.length > 0) console.error(report(failures));
    expect(report(failures)).toBe('');
  }, 600_000);

  it('lists every constructor whose pattern is built at run time', () => {
    const found = [...new Set(dynamics.map((d) => siteKey(d.file, d.enclosing)))].sort();
    const unlisted = dynamics
      .filter((d) => BUILT_AT_RUN_TIME[siteKey(d.file, d.enclosing)] === undefined)
      .map((d) => `${where(d.file, d.line)} (in ${d.enclosing ?? 'module code'}): ${d.code}`);
    expect(unlisted).toEqual([]);
    expect(Object.keys(BUILT_AT_RUN_TIME).sort()).toEqual(found);
  });

  it('is safe where the pattern is built at run time', async () => {
    const built = await recordBuilt(Object.values(BUILT_AT_RUN_TIME).map((entry) => entry.load));
    for (const key of Object.keys(BUILT_AT_RUN_TIME)) {
      expect({ key, built: (built.get(key) ?? []).length > 0 }).toEqual({ key, built: true });
    }
    const all = [...built.entries()].flatMap(([key, regexes]) => regexes.map((r) => ({ key, ...r })));
    const verdicts = await checkAll(all);
    const failures = all
      .map((r) => ({ at: r.key, source: r.source, flags: r.flags, verdict: verdicts.get(regexKey(r))! }))
      .filter((f) => !f.verdict.safe);
    if (failures.length > 0) console.error(report(failures));
    expect(report(failures)).toBe('');
  }, 600_000);
});

/**
 * Every RegExp the services' code constructs while `loads` run, by the file and function that
 * called the constructor (the global RegExp is wrapped meanwhile; regex literals do not go through
 * it and are checked from the source).
 */
async function recordBuilt(
  loads: readonly (() => Promise<unknown>)[],
): Promise<Map<string, { source: string; flags: string }[]>> {
  const built = new Map<string, { source: string; flags: string }[]>();
  const Original = globalThis.RegExp;
  const services = `${ROOT}services${sep}`;
  const callerOf = (): NodeJS.CallSite | undefined => {
    const prepare: unknown = Reflect.get(Error, 'prepareStackTrace');
    Error.prepareStackTrace = (_error, frames) => frames;
    const holder: { stack?: NodeJS.CallSite[] } = {};
    Error.captureStackTrace(holder);
    // The frames are formatted when `stack` is first read: before the formatter is put back.
    const frames = holder.stack;
    Reflect.set(Error, 'prepareStackTrace', prepare);
    return frames?.find((f) => f.getFileName()?.startsWith(services) === true);
  };
  const record = (re: RegExp): void => {
    const caller = callerOf();
    const file = caller?.getFileName();
    if (caller === undefined || file === undefined || file === null) return;
    const key = siteKey(relative(ROOT, file), caller.getFunctionName());
    built.set(key, [...(built.get(key) ?? []), { source: re.source, flags: re.flags }]);
  };
  globalThis.RegExp = new Proxy(Original, {
    construct(target, args, newTarget) {
      const re = Reflect.construct(target, args, newTarget) as RegExp;
      record(re);
      return re;
    },
    apply(target, thisArg, args) {
      const re = Reflect.apply(target, thisArg, args) as RegExp;
      record(re);
      return re;
    },
  });
  try {
    for (const load of loads) await load();
  } finally {
    globalThis.RegExp = Original;
  }
  return built;
}
