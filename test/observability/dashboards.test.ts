/**
 * Issue 11: the Grafana dashboards (dashboards/*.json) and alert rules
 * (dashboards/alerts/clinicalsuite.rules.yaml) as files: a valid Grafana 10+ model with stable
 * uids, the clinicalsuite tag, the four variables, a unit, a description and the `${datasource}`
 * datasource on every panel, unique panel ids, panels inside the 24-column grid; every query names
 * only metrics the services and the operator really register (their registries are built here
 * with the real metric code), with labels those metrics have, and filters by the label contract of
 * dashboards/README.md; every alert has a severity, a summary and a description and no Grafana
 * variable; `promtool` parses the rules and every dashboard query; the Helm chart's copies are
 * current. Whether the queries return data from running services is
 * test/observability/prometheus*.test.ts's question (a real Prometheus scraping the local runner).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { parse as parseYaml, stringify } from 'yaml';
import { BodyMemory, ConcurrencyGate, createLogger, createMetrics } from '@clinicalsuite/kit';
import { registerGpuMetrics } from '../../services/kit/src/gpu/index.js';
import { createAgentMetrics, registerAgentGauges } from '../../services/agent/src/metrics.js';
import { createFaceMetrics } from '../../services/face/src/metrics.js';
import { createLlmMetrics } from '../../services/llm/src/metrics.js';
import { createMedllmMetrics } from '../../services/medllm/src/metrics.js';
import { createReasoningMetrics, registerReasoningGauges } from '../../services/reasoning/src/metrics.js';
import { Controller } from '../../operator/src/controller/controller.js';
import type { Reconciler } from '../../operator/src/controller/reconcile.js';
import { chartCopies, CHART_COPIES } from '../../operator/src/generate.js';
import { describeReal } from '../fixtures/real-component.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = join(ROOT, 'dashboards');
const RULES_FILE = join(DIR, 'alerts', 'clinicalsuite.rules.yaml');

// ---- the Grafana model, as far as the tests read it ----

interface Target {
  refId: string;
  expr: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  description?: string;
  collapsed?: boolean;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  type: string;
  name: string;
  query: string | { query: string };
  datasource?: { uid?: string };
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}
interface Dashboard {
  uid: string;
  title: string;
  description?: string;
  tags: string[];
  schemaVersion: number;
  templating: { list: Variable[] };
  panels: Panel[];
}

const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const dashboards = files.map((file) => ({
  file,
  model: JSON.parse(readFileSync(join(DIR, file), 'utf8')) as Dashboard,
}));

/** Every non-row panel with the row it sits in (after an expanded row, or inside a collapsed one). */
function panelsOf(d: Dashboard): { panel: Panel; row: Panel | undefined }[] {
  const out: { panel: Panel; row: Panel | undefined }[] = [];
  let row: Panel | undefined;
  for (const p of d.panels) {
    if (p.type === 'row') {
      row = p;
      for (const inner of p.panels ?? []) out.push({ panel: inner, row: p });
    } else out.push({ panel: p, row });
  }
  return out;
}

// ---- PromQL, as far as the checks need it ----

interface Selector {
  metric: string;
  matchers: Map<string, string>;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** `metric{label op "value", …}` selectors of an expression. */
function selectors(expr: string): Selector[] {
  const out: Selector[] = [];
  for (const m of expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/g)) {
    const matchers = new Map<string, string>();
    for (const mm of m[2]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g))
      matchers.set(mm[1]!, `${mm[2]}"${mm[3]}"`);
    out.push({ metric: m[1]!, matchers });
  }
  return out;
}

/** Identifiers that are neither a selector with braces, a function, a keyword nor a grouping label. */
function bareIdentifiers(expr: string): string[] {
  const s = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const bare: string[] = [];
  for (const m of s.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const next = s.slice(m.index + m[0].length).trimStart()[0];
    if (next === '{' || next === '(' || KEYWORDS.has(m[0].toLowerCase())) continue;
    bare.push(m[0]);
  }
  return bare;
}

/** Labels named in `by (…)` / `on (…)` clauses and `label_replace` sources. */
function groupingLabels(expr: string): string[] {
  const labels: string[] = [];
  for (const m of expr.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g))
    labels.push(
      ...m[1]!
        .split(',')
        .map((l) => l.trim())
        .filter(Boolean),
    );
  return labels;
}

const ranges = (expr: string): string[] => [...expr.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1]!);

// ---- what the services and the operator really register ----

/** Labels every scraped series may carry besides its own: the scrape's and Prometheus'. */
const SCRAPE_LABELS = new Set([
  'namespace',
  'suite',
  'service',
  'job',
  'instance',
  'pod',
  'container',
  'endpoint',
]);
const PROMETHEUS_SERIES = new Map<string, string[]>([['up', []]]);

/** Metric family name → its label names, from registries built with the real metric code. */
async function knownMetrics(): Promise<Map<string, Set<string>>> {
  const registries: Registry[] = [];
  const kit = (service: string) => {
    const m = createMetrics({
      service,
      version: '0.0.0',
      gate: new ConcurrencyGate({ limit: 1, queueSize: 1, maxWaitMs: 1 }),
      bodyMemory: new BodyMemory(1024),
      isReady: () => true,
    });
    registerGpuMetrics(m.registry, { read: () => Promise.reject(new Error('no GPU here')) });
    registries.push(m.registry);
    return m;
  };
  const agent = kit('agent');
  createAgentMetrics(agent);
  registerAgentGauges(agent, { sessions: { size: 0 }, upstreams: { upMap: () => new Map() } });
  createFaceMetrics(kit('face'), { persons: () => 0, embeddings: () => 0 });
  createLlmMetrics(kit('llm'), {
    running: () => 0,
    waiting: () => 0,
    kvCacheUsage: () => 0,
    batching: () => ({ steps: 0, sequences: 0 }),
  });
  createMedllmMetrics(kit('medllm'), {
    running: () => 0,
    waiting: () => 0,
    backendReady: () => true,
    backendRestarts: () => 0,
  });
  const reasoning = kit('reasoning');
  createReasoningMetrics(reasoning);
  registerReasoningGauges(reasoning, { pipeline: { value: undefined }, readiness: { ready: true } });
  // The operator: the kit's metrics (service="operator") plus the controller's.
  const operator = kit('operator');
  new Controller({
    reconciler: {} as unknown as Reconciler,
    registry: operator.registry,
    logger: createLogger({ service: 'operator', level: 'silent' }),
  });
  const known = new Map<string, Set<string>>();
  for (const registry of registries) {
    for (const family of await registry.getMetricsAsJSON()) {
      const metric = registry.getSingleMetric(family.name) as unknown as { labelNames?: readonly string[] };
      const labels = new Set(metric.labelNames ?? []);
      const names =
        String(family.type) === 'histogram'
          ? [`${family.name}_bucket`, `${family.name}_sum`, `${family.name}_count`]
          : [family.name];
      for (const name of names) {
        const l = new Set([...(known.get(name) ?? []), ...labels]);
        if (name.endsWith('_bucket')) l.add('le');
        known.set(name, l);
      }
    }
  }
  // Registered in operator/src/main.ts (which starts the process, so it is read, not run).
  const main = readFileSync(join(ROOT, 'operator', 'src', 'main.ts'), 'utf8');
  const writes =
    /name: '(clinicalsuite_operator_api_writes_total)',\s*help: '[^']*',\s*labelNames: \[([^\]]*)\]/.exec(
      main,
    );
  if (writes !== null)
    known.set(
      writes[1]!,
      new Set(
        writes[2]!
          .split(',')
          .map((l) => l.trim().replace(/'/g, ''))
          .filter(Boolean),
      ),
    );
  for (const [name, labels] of PROMETHEUS_SERIES) known.set(name, new Set(labels));
  return known;
}

const knownPromise = knownMetrics();

/** Problems with one expression's metric names and labels; `external` allows DCGM_*. */
async function metricProblems(expr: string, allowExternal: boolean): Promise<string[]> {
  const known = await knownPromise;
  const problems: string[] = [];
  const used = new Set<string>(SCRAPE_LABELS);
  for (const s of selectors(expr)) {
    if (s.metric.startsWith('DCGM_')) {
      if (!allowExternal) problems.push(`${s.metric}: DCGM metric outside the DCGM row`);
      continue;
    }
    const labels = known.get(s.metric);
    if (labels === undefined) {
      problems.push(`${s.metric}: no service or the operator exports it`);
      continue;
    }
    for (const l of labels) used.add(l);
    for (const label of s.matchers.keys())
      if (!labels.has(label) && !SCRAPE_LABELS.has(label) && !label.startsWith('exported_'))
        problems.push(`${s.metric}: has no label ${label}`);
  }
  // label_replace adds its destination label.
  for (const m of expr.matchAll(/label_replace\([^"]*"([a-zA-Z_]+)"/g)) used.add(m[1]!);
  if (!allowExternal)
    for (const label of groupingLabels(expr))
      if (!used.has(label) && label !== 'le')
        problems.push(`grouping by ${label}, which no selected metric has`);
  for (const id of bareIdentifiers(expr)) problems.push(`bare identifier ${id} (a metric without {…}?)`);
  return problems;
}

// ---- the dashboards ----

const NS = 'namespace=~"$namespace"';
const SUITE = 'suite=~"$suite"';
const SERVICE = 'service=~"$service"';
const DCGM_ROW = /DCGM/;
/** The operator process's own series: filtered by service="operator", not by suite. */
const OPERATOR_SERIES = /^(controller_runtime_|workqueue_|process_|nodejs_|clinicalsuite_operator_|up$)/;

describe('dashboards/', () => {
  it('holds the dashboards the issue asks for, one per concern', () => {
    expect(dashboards.map((d) => d.model.uid).sort()).toEqual([
      'clinicalsuite-agent',
      'clinicalsuite-face',
      'clinicalsuite-gpu',
      'clinicalsuite-llm-serving',
      'clinicalsuite-operator',
      'clinicalsuite-overview',
      'clinicalsuite-reasoning',
    ]);
  });

  it('gives each a stable unique uid, a unique title, the clinicalsuite tag, schema 39', () => {
    expect(new Set(dashboards.map((d) => d.model.uid)).size).toBe(dashboards.length);
    expect(new Set(dashboards.map((d) => d.model.title)).size).toBe(dashboards.length);
    for (const { file, model } of dashboards) {
      expect({ file, uid: model.uid }).toEqual({ file, uid: `clinicalsuite-${file.replace(/\.json$/, '')}` });
      expect(model.uid.length).toBeLessThanOrEqual(40); // Grafana's limit
      expect(model.tags).toContain('clinicalsuite');
      expect(model.schemaVersion).toBe(39);
      expect(model.description).toMatch(/\w{3,}/);
    }
  });

  it.each(dashboards)('$file: has the datasource, namespace, suite and service variables', ({ model }) => {
    const vars = new Map(model.templating.list.map((v) => [v.name, v]));
    expect(vars.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const name of ['namespace', 'suite', 'service']) {
      const v = vars.get(name);
      expect({ name, type: v?.type, ds: v?.datasource?.uid, multi: v?.multi, all: v?.includeAll }).toEqual({
        name,
        type: 'query',
        ds: '${datasource}',
        multi: true,
        all: true,
      });
      const query = typeof v!.query === 'string' ? v!.query : v!.query.query;
      expect(query).toMatch(/^label_values\(.+, [a-z_]+\)$/);
    }
    // "All" must keep a dashboard's scope: where the service variable offers only some services
    // (service=~"llm|medllm"), its allValue is that regex, not ".+" (which would chart every service).
    const service = vars.get('service')!;
    const serviceQuery = typeof service.query === 'string' ? service.query : service.query.query;
    const scope = /service=~"([^"$]+)"/.exec(serviceQuery)?.[1];
    if (scope !== undefined)
      expect({ scope, allValue: service.allValue }).toEqual({ scope, allValue: scope });
  });

  it.each(dashboards)(
    '$file: every panel has a description, a unit, ${datasource} and queries',
    ({ model }) => {
      const problems: string[] = [];
      for (const { panel } of panelsOf(model)) {
        const where = `panel ${panel.id} "${panel.title}"`;
        if (!(panel.description ?? '').match(/\w{3,}/)) problems.push(`${where}: no description`);
        const unit = panel.fieldConfig?.defaults?.unit;
        if (typeof unit !== 'string' || unit === '') problems.push(`${where}: no unit`);
        if (panel.datasource?.uid !== '${datasource}')
          problems.push(`${where}: datasource not \${datasource}`);
        if ((panel.targets ?? []).length === 0) problems.push(`${where}: no query`);
        const refIds = new Set<string>();
        for (const t of panel.targets ?? []) {
          if (t.datasource?.uid !== '${datasource}') problems.push(`${where} ${t.refId}: datasource`);
          if (refIds.has(t.refId)) problems.push(`${where}: refId ${t.refId} twice`);
          refIds.add(t.refId);
          if (t.expr.trim() === '') problems.push(`${where} ${t.refId}: empty expr`);
        }
      }
      expect(problems).toEqual([]);
    },
  );

  it.each(dashboards)('$file: unique panel ids, panels inside the grid, none overlapping', ({ model }) => {
    const all = [...model.panels, ...model.panels.flatMap((p) => p.panels ?? [])];
    const ids = all.map((p) => p.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const p of all) {
      expect(p.gridPos.x).toBeGreaterThanOrEqual(0);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    }
    // Panels of a collapsed row are laid out where the row would open; compare within one level.
    const overlaps: string[] = [];
    for (const level of [model.panels, ...model.panels.map((p) => p.panels ?? [])]) {
      for (const a of level)
        for (const b of level) {
          if (a.id >= b.id) continue;
          const ga = a.gridPos;
          const gb = b.gridPos;
          if (ga.x < gb.x + gb.w && gb.x < ga.x + ga.w && ga.y < gb.y + gb.h && gb.y < ga.y + ga.h)
            overlaps.push(`${a.title} / ${b.title}`);
        }
    }
    expect(overlaps).toEqual([]);
  });

  it.each(dashboards)(
    '$file: every query filters by the label contract and uses $__rate_interval',
    ({ model }) => {
      const problems: string[] = [];
      for (const { panel, row } of panelsOf(model)) {
        const dcgmRow = row !== undefined && DCGM_ROW.test(row.title);
        for (const t of panel.targets ?? []) {
          const where = `"${panel.title}" ${t.refId}`;
          for (const range of ranges(t.expr))
            if (range !== '$__rate_interval' && range !== '$__range')
              problems.push(`${where}: range [${range}]`);
          const sels = selectors(t.expr);
          if (sels.length === 0) problems.push(`${where}: no selector`);
          for (const s of sels) {
            const m = s.matchers;
            if (s.metric.startsWith('DCGM_')) {
              if (!dcgmRow) problems.push(`${where}: ${s.metric} outside the DCGM row`);
              if (
                m.get('exported_namespace') !== '=~"$namespace"' ||
                m.get('exported_pod') !== '=~"($suite)-.+"'
              )
                problems.push(`${where}: ${s.metric} not filtered by the suite's pods`);
              continue;
            }
            if (dcgmRow) problems.push(`${where}: ${s.metric} in the DCGM row`);
            if (model.uid === 'clinicalsuite-operator') {
              if (m.get('service') !== '="operator"')
                problems.push(`${where}: ${s.metric} without service="operator"`);
              if (
                !OPERATOR_SERIES.test(s.metric) &&
                (m.get('namespace') !== NS.slice(9) || m.get('suite') !== SUITE.slice(5))
              )
                problems.push(`${where}: ${s.metric} not filtered by namespace and suite`);
              continue;
            }
            for (const [label, want] of [
              ['namespace', NS],
              ['suite', SUITE],
              ['service', SERVICE],
            ] as const)
              if (`${label}${m.get(label) ?? ''}` !== want)
                problems.push(`${where}: ${s.metric} lacks ${want}`);
          }
        }
      }
      expect(problems).toEqual([]);
    },
  );

  it.each(dashboards)(
    '$file: names only metrics and labels the services or the operator export',
    async ({ model }) => {
      const problems: string[] = [];
      for (const { panel, row } of panelsOf(model)) {
        const dcgmRow = row !== undefined && DCGM_ROW.test(row.title);
        for (const t of panel.targets ?? [])
          for (const p of await metricProblems(t.expr, dcgmRow))
            problems.push(`"${panel.title}" ${t.refId}: ${p}`);
      }
      for (const v of model.templating.list) {
        if (v.type !== 'query') continue;
        const query = typeof v.query === 'string' ? v.query : v.query.query;
        const m = /^label_values\((.+), ([a-z_]+)\)$/.exec(query);
        // label_values(metric, label) may name a metric without braces.
        const series = m === null ? query : m[1]!.includes('{') ? m[1]! : `${m[1]}{}`;
        for (const p of await metricProblems(series, false)) problems.push(`variable ${v.name}: ${p}`);
        const known = await knownPromise;
        const metric = selectors(series)[0]?.metric ?? '';
        const label = m?.[2] ?? '';
        if (!SCRAPE_LABELS.has(label) && !known.get(metric)?.has(label))
          problems.push(`variable ${v.name}: ${metric} has no label ${label}`);
      }
      expect(problems).toEqual([]);
    },
  );

  it('keeps NVIDIA DCGM exporter queries in their own row, and GPU panels for both sources', () => {
    const gpu = dashboards.find((d) => d.model.uid === 'clinicalsuite-gpu')!.model;
    const rows = gpu.panels.filter((p) => p.type === 'row' && DCGM_ROW.test(p.title));
    expect(rows).toHaveLength(1);
    const exprs = (rows[0]!.panels ?? []).flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
    for (const name of ['DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_GPU_TEMP'])
      expect(exprs).toContain(name);
    const own = panelsOf(gpu)
      .filter(({ row }) => row === undefined || !DCGM_ROW.test(row.title))
      .flatMap(({ panel }) => (panel.targets ?? []).map((t) => t.expr))
      .join('\n');
    for (const name of ['memory_used_bytes', 'utilization_ratio', 'temperature_celsius'])
      expect(own).toContain(`clinicalsuite_gpu_${name}`);
  });

  it('catches what it should: an unknown metric, a bare name, a missing filter, a fixed range', async () => {
    expect(await metricProblems('rate(llm_tokens_total{service=~"$service"}[5m])', false)).toEqual([
      'llm_tokens_total: no service or the operator exports it',
    ]);
    expect(await metricProblems('sum by (finish_reason) (llm_request_success_total{x="1"})', false)).toEqual([
      'llm_request_success_total: has no label x',
      'grouping by finish_reason, which no selected metric has',
    ]);
    expect(await metricProblems('sum(up) / llm_kv_cache_usage_perc', false)).toEqual([
      'bare identifier up (a metric without {…}?)',
      'bare identifier llm_kv_cache_usage_perc (a metric without {…}?)',
    ]);
    expect(ranges('rate(x{a="1"}[5m]) + rate(y{}[$__rate_interval])')).toEqual(['5m', '$__rate_interval']);
  });
});

// ---- the alert rules ----

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (parseYaml(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; rules: Rule[] }[] })
  .groups;
const alerts = rules.flatMap((g) => g.rules.filter((r) => r.alert !== undefined));

describe('dashboards/alerts/clinicalsuite.rules.yaml', () => {
  it('alerts on the obvious failures', () => {
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        'ClinicalSuiteServiceDown',
        'ClinicalSuiteHighErrorRatio',
        'ClinicalSuiteConcurrencyQueueSaturated',
        'ClinicalSuiteGpuMemoryNearFull',
        'ClinicalSuiteNotReady',
        'ClinicalSuiteOperatorReconcileErrors',
      ]),
    );
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length);
  });

  it.each(alerts.map((a) => [a.alert!, a] as const))(
    '%s: severity, summary, description, a for',
    (_name, a) => {
      expect(['critical', 'warning', 'info']).toContain(a.labels?.['severity']);
      expect(a.annotations?.['summary']).toMatch(/\w{3,}/);
      expect(a.annotations?.['description']).toMatch(/\w{3,}/);
      expect(a.for).toMatch(/^\d+[smh]$/);
    },
  );

  it.each(alerts.map((a) => [a.alert!, a] as const))(
    '%s: no Grafana variable, only exported metrics',
    async (_name, a) => {
      expect(a.expr).not.toMatch(/\$(__\w+|namespace|suite|service|datasource)\b|\$\{/);
      expect(await metricProblems(a.expr, false)).toEqual([]);
    },
  );
});

// ---- promtool ----

const promtoolMissing =
  spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0
    ? null
    : 'promtool is not installed (Debian package prometheus)';

describeReal(promtoolMissing, 'promtool', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'dashboards-test-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('check rules passes on the alert rules file', () => {
    const r = spawnSync('promtool', ['check', 'rules', RULES_FILE], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toContain(`SUCCESS: ${rules.flatMap((g) => g.rules).length} rules found`);
    expect(r.status).toBe(0);
  });

  it('parses every dashboard query with the variables substituted (as recording rules)', () => {
    const substitute = (expr: string) =>
      expr
        .replace(/\$__rate_interval|\$__interval/g, '1m')
        .replace(/\$__range/g, '1h')
        .replace(/\$(namespace|suite|service)\b/g, '.+');
    const exprs = dashboards.flatMap(({ file, model }) =>
      panelsOf(model).flatMap(({ panel }) =>
        (panel.targets ?? []).map((t) => ({
          where: `${file} "${panel.title}" ${t.refId}`,
          expr: substitute(t.expr),
        })),
      ),
    );
    const file = join(tmp, 'queries.rules.yaml');
    writeFileSync(
      file,
      stringify({
        groups: [
          { name: 'queries', rules: exprs.map((e, i) => ({ record: `dashboard:query_${i}`, expr: e.expr })) },
        ],
      }),
    );
    const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toContain(`SUCCESS: ${exprs.length} rules found`);
    // And it can fail: a broken query is reported.
    writeFileSync(
      file,
      stringify({ groups: [{ name: 'q', rules: [{ record: 'x:y', expr: 'sum(rate(a[1m])' }] }] }),
    );
    expect(spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' }).status).not.toBe(0);
  });
});

// ---- the Helm chart's copies ----

describe('the Helm chart ships current copies', () => {
  it('of every dashboard and rules file (npm run generate writes them)', () => {
    const want = chartCopies(ROOT);
    expect([...want.keys()].filter((f) => f.endsWith('.json'))).toHaveLength(dashboards.length);
    for (const [file, text] of want)
      expect({ file, current: readFileSync(join(ROOT, file), 'utf8') === text }).toEqual({
        file,
        current: true,
      });
    for (const { to, pattern } of CHART_COPIES) {
      const present = readdirSync(join(ROOT, to))
        .filter((n) => pattern.test(n))
        .map((n) => `${to}/${n}`);
      expect(present.sort()).toEqual([...want.keys()].filter((f) => f.startsWith(`${to}/`)).sort());
    }
  });
});
