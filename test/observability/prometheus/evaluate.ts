/**
 * Evaluates dashboards against a running Prometheus as Grafana would: resolves the templating
 * variables in order (each query variable's options from `label_values(…)` and friends, chained
 * variables substituted first), then substitutes every panel target's expression with "All"
 * selected (Grafana's `(a|b|c)` for multi-value variables). Shared by the test and the renders.
 */
import {
  parseVariableQuery,
  substitute,
  variablesUsed,
  BUILTIN_VALUES,
  type Dashboard,
  type Panel,
  type PanelTarget,
  type Variable,
} from './dashboards.js';
import type { PrometheusApi } from './server.js';

export interface ResolvedVariable {
  readonly variable: Variable;
  /** The query as sent (variables substituted), or undefined for non-query variables. */
  readonly query: string | undefined;
  readonly options: readonly string[];
  /** Why it could not be evaluated (a query Prometheus refused, an unknown function). */
  readonly error: string | undefined;
}

/** Applies a variable's `regex` (Grafana: a capture group picks the text, else the whole match filters). */
function applyRegex(values: string[], regex: string | undefined): string[] {
  if (regex === undefined) return values;
  const m = /^\/(.*)\/([gimsuy]*)$/s.exec(regex);
  const re = m ? new RegExp(m[1]!, m[2]!.replace('g', '')) : new RegExp(regex);
  return values.flatMap((v) => {
    const hit = re.exec(v);
    if (!hit) return [];
    return [hit[1] ?? hit[0]];
  });
}

export async function resolveVariables(
  prom: PrometheusApi,
  dashboard: Dashboard,
  lookbackS = 900,
): Promise<Map<string, ResolvedVariable>> {
  const resolved = new Map<string, ResolvedVariable>();
  const values = (): Record<string, readonly string[]> =>
    Object.fromEntries([...resolved].map(([name, r]) => [name, r.options]));
  for (const variable of dashboard.variables) {
    if (variable.type === 'datasource') {
      resolved.set(variable.name, { variable, query: undefined, options: ['prometheus'], error: undefined });
      continue;
    }
    if (variable.type === 'custom' || variable.type === 'interval' || variable.type === 'constant') {
      const options = (variable.query ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      resolved.set(variable.name, { variable, query: undefined, options, error: undefined });
      continue;
    }
    if (variable.type !== 'query' || variable.query === undefined) {
      resolved.set(variable.name, { variable, query: undefined, options: [], error: undefined });
      continue;
    }
    const query = substitute(variable.query, values());
    const parsed = parseVariableQuery(query);
    let options: string[] = [];
    let error: string | undefined;
    try {
      if (parsed === null) {
        error = `not a Grafana Prometheus variable query (label_values, query_result, metrics, label_names)`;
      } else if (parsed.kind === 'label_values') {
        if (parsed.selector === undefined) {
          options = await prom.labelValues(parsed.label);
        } else {
          // The selector is sent as a query too, so a broken one is reported as Prometheus words it.
          await prom.query(parsed.selector);
          const series = await prom.series(parsed.selector, lookbackS);
          options = [
            ...new Set(series.flatMap((s) => (s[parsed.label] === undefined ? [] : [s[parsed.label]!]))),
          ];
        }
      } else if (parsed.kind === 'query_result') {
        const result = await prom.query(parsed.expr);
        options = result.result.map((s) => JSON.stringify(s.metric));
      } else if (parsed.kind === 'metrics') {
        const re = new RegExp(parsed.regex);
        options = (await prom.metricNames()).filter((n) => re.test(n));
      } else {
        const series = parsed.selector === undefined ? [] : await prom.series(parsed.selector, lookbackS);
        options = [...new Set(series.flatMap((s) => Object.keys(s)))];
      }
    } catch (e) {
      error = String(e instanceof Error ? e.message : e);
    }
    options = applyRegex(options, variable.regex).sort();
    resolved.set(variable.name, { variable, query, options, error });
  }
  return resolved;
}

/** The values a panel query is substituted with: every option ("All"), or the variable's allValue. */
export function allValues(
  resolved: ReadonlyMap<string, ResolvedVariable>,
): Record<string, readonly string[] | string> {
  return Object.fromEntries(
    [...resolved].map(([name, r]) => [
      name,
      r.variable.allValue !== undefined && (r.variable.includeAll || r.variable.multi)
        ? r.variable.allValue
        : r.options,
    ]),
  );
}

/** Variables an expression uses that the dashboard does not define (nor Grafana's built-ins). */
export function undefinedVariables(expr: string, dashboard: Dashboard): string[] {
  const defined = new Set([...dashboard.variables.map((v) => v.name), ...Object.keys(BUILTIN_VALUES)]);
  return variablesUsed(expr).filter((name) => !defined.has(name));
}

export interface PanelQuery {
  readonly dashboard: Dashboard;
  readonly panel: Panel;
  readonly target: PanelTarget;
  /** The expression as sent to Prometheus. */
  readonly expr: string;
}

export function panelQueries(
  dashboard: Dashboard,
  resolved: ReadonlyMap<string, ResolvedVariable>,
): PanelQuery[] {
  const values = allValues(resolved);
  return dashboard.panels.flatMap((panel) =>
    panel.targets.map((target) => ({ dashboard, panel, target, expr: substitute(target.expr, values) })),
  );
}

/** The PromQL a variable query reads (its selector or expression), for the metric-name check. */
export function variableExpression(query: string): string {
  const parsed = parseVariableQuery(query);
  if (parsed === null) return query;
  if (parsed.kind === 'label_values' || parsed.kind === 'label_names') return parsed.selector ?? '';
  if (parsed.kind === 'query_result') return parsed.expr;
  return '';
}

/** `where` for messages: `file › row › panel [refId]`. */
export function where(q: { dashboard: Dashboard; panel: Panel; target: PanelTarget }): string {
  return `${q.dashboard.file} › ${q.panel.row ? `${q.panel.row} › ` : ''}${q.panel.title} [${q.target.refId}]`;
}
