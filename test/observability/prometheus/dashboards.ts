/**
 * Reads Grafana dashboards (the Grafana 10+ JSON model) and Prometheus rule files as data for the
 * Prometheus test and the PNG renders: every panel's PromQL targets (top-level panels and those
 * nested in `row` panels), the templating variables, Grafana's variable substitution, and the
 * metric names a PromQL expression reads. Pure apart from reading the files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse as parseYaml } from 'yaml';

export interface PanelTarget {
  readonly refId: string;
  readonly expr: string;
  readonly legendFormat: string | undefined;
  readonly instant: boolean;
}

export interface Panel {
  readonly id: number | undefined;
  readonly title: string;
  readonly type: string;
  /** The row the panel sits under ('' for none). */
  readonly row: string;
  /** `fieldConfig.defaults.unit` (Grafana unit id: s, bytes, percentunit, reqps …). */
  readonly unit: string | undefined;
  readonly gridPos: { x: number; y: number; w: number; h: number };
  readonly targets: readonly PanelTarget[];
}

export interface Variable {
  readonly name: string;
  readonly type: string;
  /** The query of a `query` variable (`label_values(metric, label)`, …), or a custom one's options. */
  readonly query: string | undefined;
  readonly multi: boolean;
  readonly includeAll: boolean;
  readonly allValue: string | undefined;
  readonly regex: string | undefined;
}

export interface Dashboard {
  readonly file: string;
  readonly uid: string;
  readonly title: string;
  readonly tags: readonly string[];
  readonly panels: readonly Panel[];
  readonly variables: readonly Variable[];
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' ? (v as Json) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function panelOf(raw: Json, row: string): Panel {
  const grid = obj(raw['gridPos']);
  const num = (k: string, d: number) => {
    const v = grid[k];
    return typeof v === 'number' ? v : d;
  };
  return {
    id: typeof raw['id'] === 'number' ? raw['id'] : undefined,
    title: str(raw['title']) ?? '(untitled)',
    type: str(raw['type']) ?? '?',
    row,
    unit: str(obj(obj(raw['fieldConfig'])['defaults'])['unit']),
    gridPos: { x: num('x', 0), y: num('y', 0), w: num('w', 12), h: num('h', 8) },
    targets: arr(raw['targets']).flatMap((t, i) => {
      const target = obj(t);
      const expr = str(target['expr']);
      if (expr === undefined || expr.trim() === '') return [];
      return [
        {
          refId: str(target['refId']) ?? String.fromCharCode(65 + i),
          expr,
          legendFormat: str(target['legendFormat']),
          instant: target['instant'] === true,
        },
      ];
    }),
  };
}

/** Every non-row panel, in order: top-level ones and those inside rows (collapsed rows hold theirs). */
export function panelsOf(dashboard: Json): Panel[] {
  const out: Panel[] = [];
  let row = '';
  for (const p of arr(dashboard['panels'])) {
    const raw = obj(p);
    if (raw['type'] === 'row') {
      row = str(raw['title']) ?? '';
      for (const inner of arr(raw['panels'])) out.push(panelOf(obj(inner), row));
      continue;
    }
    out.push(panelOf(raw, row));
  }
  return out;
}

export function variablesOf(dashboard: Json): Variable[] {
  return arr(obj(dashboard['templating'])['list']).map((v) => {
    const raw = obj(v);
    const q = raw['query'];
    const regex = str(raw['regex']);
    return {
      name: str(raw['name']) ?? '?',
      type: str(raw['type']) ?? '?',
      query: str(q) ?? str(obj(q)['query']),
      multi: raw['multi'] === true,
      includeAll: raw['includeAll'] === true,
      allValue: str(raw['allValue']) || undefined,
      regex: regex === '' ? undefined : regex,
    };
  });
}

export function parseDashboard(file: string, text: string): Dashboard {
  const json = obj(JSON.parse(text));
  return {
    file: basename(file),
    uid: str(json['uid']) ?? '',
    title: str(json['title']) ?? basename(file),
    tags: arr(json['tags']).flatMap((t) => (typeof t === 'string' ? [t] : [])),
    panels: panelsOf(json),
    variables: variablesOf(json),
  };
}

/** Every `*.json` dashboard in `dir`, sorted by file name. */
export function loadDashboards(dir: string): Dashboard[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => parseDashboard(f, readFileSync(join(dir, f), 'utf8')));
}

export interface Rule {
  readonly group: string;
  readonly name: string;
  readonly kind: 'alert' | 'record';
  readonly expr: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** The rules of a Prometheus rule file (`groups[].rules[]`), or of a PrometheusRule's `spec`. */
export function loadRules(file: string): Rule[] {
  const doc = obj(parseYaml(readFileSync(file, 'utf8')));
  const groups = arr(doc['groups'] ?? obj(doc['spec'])['groups']);
  return groups.flatMap((g) => {
    const group = obj(g);
    return arr(group['rules']).map((r) => {
      const rule = obj(r);
      const alert = str(rule['alert']);
      const labels = Object.fromEntries(Object.entries(obj(rule['labels'])).map(([k, v]) => [k, String(v)]));
      return {
        group: str(group['name']) ?? '?',
        name: alert ?? str(rule['record']) ?? '?',
        kind: alert === undefined ? ('record' as const) : ('alert' as const),
        expr: str(rule['expr']) ?? '',
        labels,
      };
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Grafana variables

/** Grafana's built-in interval variables, with the values Grafana would give over a short window at a 1 s scrape. */
export const BUILTIN_VALUES: Readonly<Record<string, string>> = {
  __rate_interval: '15s',
  __interval: '5s',
  __interval_ms: '5000',
  __range: '5m',
  __range_s: '300',
  __range_ms: '300000',
  __auto: '5s',
};

/** Grafana's regex escaping of a multi-value option (what `${var:regex}` and `=~"$var"` get). */
export function regexEscape(value: string): string {
  return value.replace(/[\\^$*+?.()|[\]{}/]/g, '\\$&');
}

/**
 * Substitutes `$name`, `${name}`, `${name:format}` and `[[name]]`: values of several options are
 * joined as Grafana does for Prometheus (`(a|b)`, regex-escaped); one value as is.
 */
export function substitute(
  expr: string,
  values: Readonly<Record<string, readonly string[] | string>>,
): string {
  const valueOf = (name: string): string | undefined => {
    const v = values[name] ?? BUILTIN_VALUES[name];
    if (v === undefined) return undefined;
    if (typeof v === 'string') return v;
    if (v.length === 1) return v[0];
    return `(${v.map(regexEscape).join('|')})`;
  };
  return expr.replace(
    /\$\{(\w+)(?::[\w]+)?\}|\[\[(\w+)\]\]|\$(\w+)/g,
    (whole, a?: string, b?: string, c?: string) => valueOf((a ?? b ?? c)!) ?? whole,
  );
}

/** Names of the variables an expression uses (`$x`, `${x}`, `[[x]]`), built-ins excluded. */
export function variablesUsed(expr: string): string[] {
  const names = new Set<string>();
  for (const m of expr.matchAll(/\$\{(\w+)(?::[\w]+)?\}|\[\[(\w+)\]\]|\$(\w+)/g)) {
    const name = (m[1] ?? m[2] ?? m[3])!;
    if (!(name in BUILTIN_VALUES)) names.add(name);
  }
  return [...names];
}

export type VariableQuery =
  | { readonly kind: 'label_values'; readonly selector: string | undefined; readonly label: string }
  | { readonly kind: 'query_result'; readonly expr: string }
  | { readonly kind: 'metrics'; readonly regex: string }
  | { readonly kind: 'label_names'; readonly selector: string | undefined };

/** Grafana's Prometheus variable query functions. */
export function parseVariableQuery(query: string): VariableQuery | null {
  const q = query.trim();
  let m = /^label_values\(\s*(.*?)\s*,\s*([a-zA-Z_]\w*)\s*\)$/s.exec(q);
  if (m) return { kind: 'label_values', selector: m[1], label: m[2]! };
  m = /^label_values\(\s*([a-zA-Z_]\w*)\s*\)$/.exec(q);
  if (m) return { kind: 'label_values', selector: undefined, label: m[1]! };
  m = /^query_result\((.*)\)$/s.exec(q);
  if (m) return { kind: 'query_result', expr: m[1]! };
  m = /^metrics\((.*)\)$/s.exec(q);
  if (m) return { kind: 'metrics', regex: m[1]!.trim() };
  m = /^label_names\((.*)\)$/s.exec(q);
  if (m) return { kind: 'label_names', selector: m[1]!.trim() || undefined };
  return null;
}

// ---------------------------------------------------------------------------------------------
// PromQL

const FUNCTIONS = new Set([
  'abs',
  'absent',
  'absent_over_time',
  'acos',
  'acosh',
  'asin',
  'asinh',
  'atan',
  'atanh',
  'avg_over_time',
  'ceil',
  'changes',
  'clamp',
  'clamp_max',
  'clamp_min',
  'cos',
  'cosh',
  'count_over_time',
  'day_of_month',
  'day_of_week',
  'day_of_year',
  'days_in_month',
  'deg',
  'delta',
  'deriv',
  'exp',
  'floor',
  'histogram_count',
  'histogram_fraction',
  'histogram_quantile',
  'histogram_sum',
  'holt_winters',
  'hour',
  'idelta',
  'increase',
  'irate',
  'label_join',
  'label_replace',
  'last_over_time',
  'ln',
  'log10',
  'log2',
  'mad_over_time',
  'max_over_time',
  'min_over_time',
  'minute',
  'month',
  'predict_linear',
  'present_over_time',
  'quantile_over_time',
  'rad',
  'rate',
  'resets',
  'round',
  'scalar',
  'sgn',
  'sin',
  'sinh',
  'sort',
  'sort_desc',
  'sqrt',
  'stddev_over_time',
  'stdvar_over_time',
  'sum_over_time',
  'tan',
  'tanh',
  'time',
  'timestamp',
  'vector',
  'year',
  'pi',
  // aggregations
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
]);
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'atan2',
  'inf',
  'nan',
  'start',
  'end',
]);

type Token =
  | { readonly t: 'id'; readonly v: string; readonly at: number }
  | { readonly t: 'braces'; readonly v: string; readonly at: number }
  | { readonly t: 'range'; readonly at: number }
  | { readonly t: 'str' | 'num' | 'op'; readonly v: string; readonly at: number };

/** A small PromQL lexer: identifiers, `{…}` matcher blocks, `[…]` ranges, strings, numbers, operators. */
function lex(expr: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const readString = (from: number): number => {
    const q = expr[from]!;
    let j = from + 1;
    while (j < expr.length && expr[j] !== q) j += expr[j] === '\\' && q !== '`' ? 2 : 1;
    return j + 1;
  };
  while (i < expr.length) {
    const c = expr[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      const j = readString(i);
      tokens.push({ t: 'str', v: expr.slice(i, j), at: i });
      i = j;
    } else if (c === '{') {
      let j = i + 1;
      while (j < expr.length && expr[j] !== '}')
        j = expr[j] === '"' || expr[j] === "'" ? readString(j) : j + 1;
      tokens.push({ t: 'braces', v: expr.slice(i, j + 1), at: i });
      i = j + 1;
    } else if (c === '[') {
      const j = expr.indexOf(']', i);
      tokens.push({ t: 'range', at: i });
      i = j < 0 ? expr.length : j + 1;
    } else if (/[a-zA-Z_:]/.test(c)) {
      const m = /^[a-zA-Z_:][\w:]*/.exec(expr.slice(i))!;
      tokens.push({ t: 'id', v: m[0], at: i });
      i += m[0].length;
    } else if (/[\d.]/.test(c)) {
      const m = /^(0x[\da-fA-F]+|\d*\.?\d+(?:[eE][+-]?\d+)?(?:[smhdwy]|ms)*)/.exec(expr.slice(i));
      const len = m && m[0] !== '' ? m[0].length : 1;
      tokens.push({ t: 'num', v: expr.slice(i, i + len), at: i });
      i += len;
    } else {
      tokens.push({ t: 'op', v: c, at: i });
      i++;
    }
  }
  return tokens;
}

const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/** The vector selectors of an expression: `[name, matcher block]` pairs, as written. */
function selectors(expr: string): { name: string | undefined; braces: string | undefined }[] {
  const tokens = lex(expr);
  const out: { name: string | undefined; braces: string | undefined }[] = [];
  let inGrouping = false;
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k]!;
    const next = tokens[k + 1];
    if (inGrouping) {
      if (tok.t === 'op' && tok.v === ')') inGrouping = false;
      continue;
    }
    if (tok.t === 'id') {
      const lower = tok.v.toLowerCase();
      if (GROUPING.has(lower)) {
        if (next?.t === 'op' && next.v === '(') {
          inGrouping = true;
          k++;
        }
        continue;
      }
      if (next?.t === 'op' && next.v === '(') continue; // a function or aggregation call
      if (KEYWORDS.has(lower) || (FUNCTIONS.has(tok.v) && next?.t !== 'braces')) continue;
      const prev = tokens[k - 1];
      if (prev?.t === 'op' && prev.v === '@') continue;
      if (next?.t === 'braces') {
        out.push({ name: tok.v, braces: next.v });
        k++;
      } else out.push({ name: tok.v, braces: undefined });
    } else if (tok.t === 'braces') {
      out.push({ name: undefined, braces: tok.v });
    }
  }
  return out;
}

/**
 * The metric names an expression reads: its identifiers that are not functions, aggregations,
 * keywords, label names (inside `{…}`, `by (…)`, `on (…)` …), durations or strings; plus names
 * given as `{__name__="…"}`. Variables are left as they are: substitute first.
 */
export function metricNames(expr: string): string[] {
  const names = new Set<string>();
  for (const s of selectors(expr)) {
    if (s.name !== undefined) names.add(s.name);
    const byName = s.braces === undefined ? null : /__name__\s*=\s*"([a-zA-Z_:][\w:]*)"/.exec(s.braces);
    if (byName) names.add(byName[1]!);
  }
  return [...names].sort();
}

/**
 * The vector selectors of an expression (`name{matchers}` or `{matchers}`), as written: what an
 * alert's expression reads, to check each returns series even while the alert is quiet.
 */
export function vectorSelectors(expr: string): string[] {
  return [...new Set(selectors(expr).map((s) => `${s.name ?? ''}${s.braces ?? ''}`))];
}

/** The dcgm-exporter counters a fixture CSV enables (uncommented `FIELD, type, help` lines). */
export function dcgmCounters(csv: string): string[] {
  return csv
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(',')[0]!.trim())
    .filter((name) => /^DCGM_/.test(name));
}
