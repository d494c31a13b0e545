/**
 * A checker for the whole /metrics output of a service (Prometheus text exposition format 0.0.4,
 * as prom-client writes it). Pure: text in, problems out; every problem names the service, the
 * metric family and the rule, so one run reports everything at once.
 *
 * Rules (https://prometheus.io/docs/practices/naming/ and the instrumentation practices):
 *  - missing-help / missing-type: every family has non-empty HELP and a TYPE.
 *  - name-format: snake_case `[a-z][a-z0-9_]*`, no `__`, no trailing `_`, no colons (rules only).
 *  - name-prefix: an application prefix followed by at least one more word, and the prefix is one
 *    the service may use: its own (the kit's `metrics.prefix`, the service name with `-` as `_`, so
 *    `task_agent_` is the task agent's one application word), `clinicalsuite`, or the shared ones
 *    (`http`, `process`, `nodejs`).
 *  - counter-total: counters end in `_total`; non-counters do not.
 *  - reserved-suffix: only histograms/summaries end in `_count`, `_sum`, `_bucket`.
 *  - base-unit: no non-base units (milliseconds, minutes, kilobytes, percent...): seconds, bytes,
 *    ratio 0..1.
 *  - unit-suffix: a unit word (`seconds`, `bytes`, ...) is the suffix (only `_total` after it).
 *  - missing-unit: a name that says it measures time (`duration`, `latency`, `timestamp`, ...) ends
 *    in `_seconds` (`_seconds_total` on counters).
 *  - ratio-range: a gauge named `_ratio` holds values in 0..1, not percent.
 *  - label-name-format: label names snake_case, not `__`-reserved.
 *  - label-unbounded-name: a label whose name says ids, paths, user text (`id`, `*_id`, `path`,
 *    `url`, `user`, `session`, `prompt`, `text`, `query`, `email`, `name`...), except the documented
 *    bounded ones (`gpu_name`, `service`, `route`).
 *  - route-template: `route` values are route templates (`/v1/things/:id`) or `unmatched`,
 *    never a raw path with an id in it.
 *  - label-cardinality: more than `maxDistinctValues` distinct values of one label in one scrape.
 *  - label-value-id: a value that looks like a UUID, a long number used as an id, a long hex
 *    string, an email address or a raw path with an id in it.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  help: string | null;
  type: MetricType | null;
  readonly samples: Sample[];
}

export type Rule =
  | 'parse'
  | 'missing-help'
  | 'missing-type'
  | 'name-format'
  | 'name-prefix'
  | 'counter-total'
  | 'reserved-suffix'
  | 'base-unit'
  | 'unit-suffix'
  | 'missing-unit'
  | 'ratio-range'
  | 'label-name-format'
  | 'label-unbounded-name'
  | 'route-template'
  | 'label-cardinality'
  | 'label-value-id';

export interface Problem {
  readonly service: string;
  readonly metric: string;
  readonly rule: Rule;
  readonly label?: string;
  readonly message: string;
}

export interface LintOptions {
  /** Names the service in every problem. */
  readonly service: string;
  /** Application prefixes the service may use; default: its own name (`-` as `_`) and the shared ones. */
  readonly prefixes?: readonly string[];
  /** Most distinct values of one label in one scrape (default 50). */
  readonly maxDistinctValues?: number;
}

export const SHARED_PREFIXES = ['clinicalsuite', 'http', 'process', 'nodejs'] as const;
export const DEFAULT_MAX_DISTINCT_VALUES = 50;

const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const LABEL_SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/** Units that are not base units, as name words: use seconds, bytes, ratio (0..1) instead. */
const NON_BASE_UNITS = new Set([
  'ms',
  'msec',
  'millis',
  'milliseconds',
  'us',
  'usec',
  'micros',
  'microseconds',
  'ns',
  'nanoseconds',
  'minutes',
  'hours',
  'days',
  'kb',
  'kib',
  'kilobytes',
  'mb',
  'mib',
  'megabytes',
  'gb',
  'gib',
  'gigabytes',
  'bits',
  'percent',
  'perc',
  'pct',
  'percentage',
]);
/** Base units, which belong at the end of the name (before `_total` on counters). */
const BASE_UNITS = new Set([
  'seconds',
  'bytes',
  'ratio',
  'celsius',
  'watts',
  'joules',
  'volts',
  'amperes',
  'meters',
  'grams',
]);
const RESERVED_SUFFIXES = ['_count', '_sum', '_bucket'] as const;
/** Words that say a metric measures time, which then needs the seconds unit. */
const TIME_WORDS = new Set(['duration', 'latency', 'elapsed', 'uptime', 'timestamp', 'delay', 'age']);

/** Label name words that say the values are ids, paths or user text (unbounded). */
const UNBOUNDED_LABEL_WORDS = new Set([
  'id',
  'ids',
  'uuid',
  'guid',
  'path',
  'url',
  'uri',
  'user',
  'username',
  'session',
  'prompt',
  'text',
  'query',
  'email',
  'name',
  'message',
  'filename',
  'file',
  'ip',
  'token',
  'patient',
]);
/** Documented bounded labels whose names would otherwise look unbounded. */
export const BOUNDED_LABELS = new Set(['gpu_name', 'service', 'route']);
/** Labels the format itself defines. */
const FORMAT_LABELS = new Set(['le', 'quantile']);

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const LONG_NUMBER = /^-?\d{5,}$/;
const LONG_HEX = /^(0x)?[0-9a-f]{16,}$/i;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** A path segment that is an id rather than a template word: digits, UUID, long hex, or mixed. */
const ID_SEGMENT = (segment: string): boolean =>
  /^\d+$/.test(segment) ||
  UUID.test(segment) ||
  /^[0-9a-f]{12,}$/i.test(segment) ||
  (/\d/.test(segment) && /[a-z]/i.test(segment) && segment.length >= 12 && !segment.startsWith(':'));

function unescapeLabel(value: string): string {
  return value.replace(/\\(n|\\|")/g, (_, c: string) => (c === 'n' ? '\n' : c));
}
function unescapeHelp(value: string): string {
  return value.replace(/\\(n|\\)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** The family a sample belongs to, given the families declared so far. */
function familyOf(sampleName: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(sampleName);
  if (direct) return direct;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sampleName.endsWith(suffix)) continue;
    const family = families.get(sampleName.slice(0, -suffix.length));
    if (family && (family.type === 'histogram' || family.type === 'summary')) return family;
  }
  return undefined;
}

function parseLabels(text: string): Record<string, string> | string {
  const labels: Record<string, string> = {};
  const re = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)/y;
  let at = 0;
  while (at < text.length) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) return `bad label set {${text}}`;
    const [, name, value] = m as unknown as [string, string, string];
    if (name in labels) return `label ${name} given twice`;
    labels[name] = unescapeLabel(value);
    at = re.lastIndex;
  }
  return labels;
}

export interface Parsed {
  readonly families: Family[];
  readonly errors: { readonly metric: string; readonly message: string }[];
}

/** Parses Prometheus text exposition (0.0.4). Samples without a declared family get one of their own. */
export function parseExposition(text: string): Parsed {
  const families = new Map<string, Family>();
  const errors: { metric: string; message: string }[] = [];
  const declare = (name: string): Family => {
    let family = families.get(name);
    if (!family) {
      family = { name, help: null, type: null, samples: [] };
      families.set(name, family);
    }
    return family;
  };
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (!m) continue; // a plain comment
      const [, kind, name, rest = ''] = m as unknown as [string, string, string, string | undefined];
      const family = declare(name);
      if (kind === 'HELP') family.help = unescapeHelp(rest.trim());
      else {
        const type = rest.trim() as MetricType;
        if (!TYPES.has(type))
          errors.push({ metric: name, message: `line ${index + 1}: unknown TYPE "${rest}"` });
        else family.type = type;
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/.exec(line);
    if (!m) {
      errors.push({
        metric: line.split(/[\s{]/)[0] ?? '',
        message: `line ${index + 1}: not a sample: ${line}`,
      });
      continue;
    }
    const [, name, labelText = '', valueText] = m as unknown as [string, string, string | undefined, string];
    const labels = parseLabels(labelText);
    if (typeof labels === 'string') {
      errors.push({ metric: name, message: `line ${index + 1}: ${labels}` });
      continue;
    }
    // As Prometheus reads it (Go's ParseFloat): NaN and Inf in any case (prom-client writes "Nan").
    const value = /^nan$/i.test(valueText)
      ? NaN
      : Number(valueText.replace(/^([+-]?)inf(inity)?$/i, (_, sign: string) => `${sign}Infinity`));
    if (Number.isNaN(value) && !/^nan$/i.test(valueText))
      errors.push({ metric: name, message: `line ${index + 1}: bad value "${valueText}"` });
    const family = familyOf(name, families) ?? declare(name);
    family.samples.push({ name, labels, value });
  }
  return { families: [...families.values()], errors };
}

function checkName(
  family: Family,
  prefixes: readonly string[],
  problem: (rule: Rule, message: string) => void,
): void {
  const { name, type } = family;
  if (!SNAKE.test(name)) {
    problem('name-format', `"${name}" is not snake_case ([a-z][a-z0-9_]*, no "__", no trailing "_", no ":")`);
    return;
  }
  const words = name.split('_');
  const prefix = prefixes.find((p) => name.startsWith(`${p}_`));
  if (words.length < 2)
    problem(
      'name-prefix',
      `"${name}" has no application prefix (a single word followed by the metric's name)`,
    );
  else if (prefix === undefined)
    problem(
      'name-prefix',
      `prefix "${words[0] ?? ''}_" is not one of this service's (${prefixes.map((p) => `${p}_`).join(', ')})`,
    );

  if (type === 'counter' && !name.endsWith('_total'))
    problem('counter-total', 'a counter must end in "_total"');
  if (type !== null && type !== 'counter' && name.endsWith('_total'))
    problem('counter-total', `a ${type} must not end in "_total" (only counters do)`);
  if (type !== 'histogram' && type !== 'summary') {
    const suffix = RESERVED_SUFFIXES.find((s) => name.endsWith(s));
    if (suffix) problem('reserved-suffix', `"${suffix}" is reserved for histogram and summary series`);
  }
  // The words after the application prefix.
  const nameWords = name.slice((prefix ?? words[0] ?? '').length + 1).split('_');
  for (const word of nameWords) {
    if (NON_BASE_UNITS.has(word))
      problem('base-unit', `"${word}" is not a base unit: use seconds, bytes or a ratio 0..1`);
  }
  const unitAt = nameWords.findIndex((word) => BASE_UNITS.has(word));
  if (unitAt >= 0) {
    const after = nameWords.slice(unitAt + 1);
    const ok = after.length === 0 || (after.length === 1 && after[0] === 'total' && type === 'counter');
    if (!ok)
      problem(
        'unit-suffix',
        `the unit "${nameWords[unitAt] ?? ''}" must be the name's suffix (only "_total" after it)`,
      );
  }
  const timeWord = nameWords.find((word) => TIME_WORDS.has(word));
  if (timeWord !== undefined && !/_seconds(_total)?$/.test(name))
    problem('missing-unit', `"${timeWord}" measures time: the name must end in "_seconds" (a base unit)`);
}

function isRatioGauge(family: Family): boolean {
  return family.name.endsWith('_ratio') && (family.type === 'gauge' || family.type === 'untyped');
}

/** Lints one scrape of one service. */
export function lintExposition(text: string, options: LintOptions): Problem[] {
  const { service } = options;
  const prefixes = options.prefixes ?? [
    service.replace(/[^a-z0-9]/gi, '_').toLowerCase(),
    ...SHARED_PREFIXES,
  ];
  const maxDistinct = options.maxDistinctValues ?? DEFAULT_MAX_DISTINCT_VALUES;
  const problems: Problem[] = [];
  const { families, errors } = parseExposition(text);
  for (const error of errors)
    problems.push({ service, metric: error.metric, rule: 'parse', message: error.message });

  for (const family of families) {
    const metric = family.name;
    const problem = (rule: Rule, message: string, label?: string): void => {
      problems.push(
        label === undefined ? { service, metric, rule, message } : { service, metric, rule, label, message },
      );
    };
    if (family.help === null || family.help === '') problem('missing-help', 'no HELP text');
    if (family.type === null) problem('missing-type', 'no TYPE');
    checkName(family, prefixes, problem);

    if (isRatioGauge(family)) {
      const outside = family.samples.find((x) => x.value < 0 || x.value > 1);
      if (outside !== undefined)
        problem(
          'ratio-range',
          `a ratio must be 0..1, found ${String(outside.value)} (percent is not a base unit)`,
        );
    }

    const values = new Map<string, Set<string>>();
    for (const sample of family.samples) {
      for (const [label, value] of Object.entries(sample.labels)) {
        let set = values.get(label);
        if (!set) values.set(label, (set = new Set()));
        set.add(value);
      }
    }
    for (const [label, set] of values) {
      if (FORMAT_LABELS.has(label)) continue;
      if (!LABEL_SNAKE.test(label)) problem('label-name-format', `label "${label}" is not snake_case`, label);
      if (!BOUNDED_LABELS.has(label) && label.split('_').some((w) => UNBOUNDED_LABEL_WORDS.has(w)))
        problem(
          'label-unbounded-name',
          `label "${label}" names ids, paths or user text, whose values are unbounded`,
          label,
        );
      if (set.size > maxDistinct)
        problem(
          'label-cardinality',
          `label "${label}" has ${set.size} distinct values in one scrape (bound ${maxDistinct})`,
          label,
        );
      const bad = new Set<string>();
      for (const value of set) {
        if (label === 'route') {
          const template =
            value === 'unmatched' || (value.startsWith('/') && !value.split('/').some(ID_SEGMENT));
          if (!template)
            problem('route-template', `route "${value}" is not a route template (or "unmatched")`, label);
          continue;
        }
        if (
          UUID.test(value) ||
          LONG_NUMBER.test(value) ||
          LONG_HEX.test(value) ||
          EMAIL.test(value) ||
          (value.startsWith('/') && value.split('/').some(ID_SEGMENT))
        )
          bad.add(value);
      }
      if (bad.size > 0) {
        const shown = [...bad].slice(0, 3).map((v) => JSON.stringify(v));
        problem(
          'label-value-id',
          `label "${label}" has values that look like ids or raw paths: ${shown.join(', ')}${bad.size > 3 ? ', ...' : ''}`,
          label,
        );
      }
    }
  }
  return problems;
}

/** A problem the tests accept for now, with the reason; `service: '*'` matches every service. */
export interface KnownException {
  /** A service name, or '*' for every service. */
  readonly service: string;
  readonly metric: string;
  readonly rule: Rule;
  readonly label?: string;
  readonly reason: string;
}

export function matches(problem: Problem, exception: KnownException): boolean {
  return (
    (exception.service === '*' || exception.service === problem.service) &&
    exception.metric === problem.metric &&
    exception.rule === problem.rule &&
    (exception.label === undefined || exception.label === problem.label)
  );
}

export function formatProblem(problem: Problem): string {
  return `${problem.service}: ${problem.metric}: [${problem.rule}] ${problem.message}`;
}
