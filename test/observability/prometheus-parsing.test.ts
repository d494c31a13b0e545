/**
 * The pure parts of the real-Prometheus dashboard test: which metric names a PromQL expression
 * reads, an alert's vector selectors, Grafana's variable substitution and variable queries, and
 * panels nested in rows. These decide what the live test checks, so a mistake here would let a
 * wrong dashboard pass.
 */
import { describe, expect, it } from '@jest/globals';
import {
  dcgmCounters,
  metricNames,
  panelsOf,
  parseVariableQuery,
  substitute,
  variablesUsed,
  vectorSelectors,
} from './prometheus/dashboards.js';
import { formatValue } from './render/render.js';

describe('metricNames', () => {
  it('keeps metric names; drops functions, aggregations, keywords, label names, durations and strings', () => {
    const expr =
      'histogram_quantile(0.95, sum by (le, service) (rate(http_request_duration_seconds_bucket{service=~"$service", route!="/metrics"}[$__rate_interval])))' +
      ' / on (service) group_left (version) max without (instance) (clinicalsuite_build_info)' +
      ' > bool 0 and clinicalsuite:errors:ratio offset 5m or vector(0) unless absent(up{job="x"})';
    expect(metricNames(expr)).toEqual([
      'clinicalsuite:errors:ratio',
      'clinicalsuite_build_info',
      'http_request_duration_seconds_bucket',
      'up',
    ]);
  });

  it('reads {__name__="…"} selectors and ignores label values that look like metric names', () => {
    expect(metricNames('sum({__name__="llm_prompt_tokens_total", service="http_requests_total"})')).toEqual([
      'llm_prompt_tokens_total',
    ]);
  });

  it('a grouping clause after the aggregation body, a topk parameter, label_replace strings', () => {
    expect(
      metricNames(
        'topk(5, sum(rate(x_total[5m])) by (service)) + label_replace(y, "dst", "$1", "src", "(.*)") * ignoring(le) z',
      ),
    ).toEqual(['x_total', 'y', 'z']);
  });
});

describe('vectorSelectors', () => {
  it('lists each selector with its matchers, not the functions or grouping labels around it', () => {
    expect(
      vectorSelectors(
        'sum by (namespace, suite, service) (rate(http_requests_total{status=~"5.."}[5m])) / sum by (namespace) (rate(http_requests_total[5m])) > 0.05 and on (service) up == 1',
      ),
    ).toEqual(['http_requests_total{status=~"5.."}', 'http_requests_total', 'up']);
  });
});

describe('Grafana variables', () => {
  it('substitutes $x, ${x}, ${x:regex} and [[x]]; several values as a regex alternation, escaped', () => {
    const values = { service: ['llm', 'task_agent'], suite: ['a.b'], namespace: '.+' };
    expect(substitute('up{service=~"$service", suite=~"${suite}", namespace=~"[[namespace]]"}', values)).toBe(
      'up{service=~"(llm|task_agent)", suite=~"a.b", namespace=~".+"}',
    );
    expect(substitute('rate(x[$__rate_interval]) $unknown', values)).toBe('rate(x[15s]) $unknown');
    expect(variablesUsed('x{a="$a", b="${b:regex}"}[$__rate_interval]')).toEqual(['a', 'b']);
  });

  it('parses label_values with and without a selector, query_result and metrics', () => {
    expect(parseVariableQuery('label_values(up{namespace=~"$namespace"}, suite)')).toEqual({
      kind: 'label_values',
      selector: 'up{namespace=~"$namespace"}',
      label: 'suite',
    });
    expect(parseVariableQuery('label_values(namespace)')).toEqual({
      kind: 'label_values',
      selector: undefined,
      label: 'namespace',
    });
    expect(parseVariableQuery('query_result(topk(3, up))')).toEqual({
      kind: 'query_result',
      expr: 'topk(3, up)',
    });
    expect(parseVariableQuery('metrics(llm_.*)')).toEqual({ kind: 'metrics', regex: 'llm_.*' });
    expect(parseVariableQuery('up')).toBeNull();
  });
});

describe('panels', () => {
  it('finds panels at the top level and inside rows (collapsed rows hold theirs), with their row', () => {
    const panels = panelsOf({
      panels: [
        { type: 'row', title: 'A', collapsed: false, panels: [] },
        { type: 'timeseries', title: 'one', targets: [{ refId: 'A', expr: 'up' }, { refId: 'B' }] },
        {
          type: 'row',
          title: 'B',
          collapsed: true,
          panels: [{ type: 'stat', title: 'two', targets: [{ expr: 'x' }] }],
        },
        { type: 'text', title: 'notes' },
      ],
    });
    expect(panels.map((p) => [p.row, p.title, p.targets.map((t) => t.expr)])).toEqual([
      ['A', 'one', ['up']],
      ['B', 'two', ['x']],
      ['B', 'notes', []],
    ]);
  });
});

describe('dcgm-exporter counter lists', () => {
  it('reads the enabled fields only', () => {
    expect(
      dcgmCounters(
        '# c\nDCGM_FI_DEV_GPU_UTIL, gauge, x\n# DCGM_FI_DEV_RETIRED_SBE, counter, y\nDCGM_FI_DEV_DEC_UTIL , gauge, z\n',
      ),
    ).toEqual(['DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_DEC_UTIL']);
  });
});

describe('render units', () => {
  it('formats values in Grafana units', () => {
    expect(formatValue(0.0123, 's')).toBe('12.3 ms');
    expect(formatValue(150754820096, 'bytes')).toBe('140 GiB');
    expect(formatValue(0.42, 'percentunit')).toBe('42%');
    expect(formatValue(0.25, 'short')).toBe('0.25');
    expect(formatValue(1500, 'short')).toBe('1.5 K');
    expect(formatValue(12, 'suffix:tok/s')).toBe('12 tok/s');
  });
});
