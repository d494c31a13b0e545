/**
 * The dashboards and alert rules against a real Prometheus (Debian's prometheus 2.42) scraping the
 * real suite: the local runner (`npm start`'s code) runs every service that can run here on tiny
 * or cached models, with a fake nvidia-smi printing a real H200 capture so the GPU series are
 * real-shaped (this machine has no GPU); the operator runs against the test control plane with one
 * small suite applied when that control plane is built. A short load runs, then:
 *
 * - every query of every dashboard (panel targets, rows' nested panels, templating variables,
 *   `label_values(metric, label)` evaluated as a series query) with the variables substituted as
 *   Grafana does (All selected) parses, and returns series over the load window, except where
 *   what it charts did not run (said per panel) and dcgm-exporter's DCGM_* series (an external
 *   exporter), whose names are checked against its default counter lists instead;
 * - every metric name in every dashboard and rule expression is one a scraped target exposes;
 * - every alert rule is loaded with health ok, each alert's selectors return series, and the
 *   service-down alert really goes pending when a service stops answering (SIGSTOP: the runner
 *   restarts a service that exits, not one that hangs).
 *
 * RENDER_DASHBOARDS=<dir> also draws each dashboard's panels over the load window as PNGs there.
 * OBSERVABILITY_DASHBOARDS_DIR / OBSERVABILITY_RULES_FILE check other files (default dashboards/).
 * Skipped, saying why, only when prometheus is not installed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { COMPONENTS, type ComponentKey } from '../../operator/src/api/v1alpha1/index.js';
import { metricServiceName } from '../../operator/src/resources/service-monitor.js';
import {
  dcgmCounters,
  loadDashboards,
  loadRules,
  metricNames,
  vectorSelectors,
  type Dashboard,
  type Rule,
} from './prometheus/dashboards.js';
import {
  panelQueries,
  variableExpression,
  resolveVariables,
  undefinedVariables,
  where,
  type PanelQuery,
} from './prometheus/evaluate.js';
import { describeReal } from '../fixtures/real-component.js';
import { runLoad, type LoadSummary } from './prometheus/load.js';
import { startOperator, type RunningOperator } from './prometheus/operator.js';
import { Prometheus, PromApiError, prometheusMissing, type ScrapeJob } from './prometheus/server.js';
import { NAMESPACE, startSuite, SUITE_NAME, GPU_FIXTURE, type RunningSuite } from './prometheus/suite.js';
import { renderDashboards } from './render/render.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = join(REPO, 'test', 'fixtures', 'observability');
const DASHBOARDS_DIR = resolve(process.env['OBSERVABILITY_DASHBOARDS_DIR'] ?? join(REPO, 'dashboards'));
const RULES_FILE = resolve(
  process.env['OBSERVABILITY_RULES_FILE'] ?? join(REPO, 'dashboards', 'alerts', 'clinicalsuite.rules.yaml'),
);
/**
 * The operator's target as dashboards/README.md says to scrape it (and the chart's ServiceMonitor
 * labels it): honor labels, `service="operator"` on the target (so `up` carries it too), the
 * operator's own namespace, no suite.
 */
const OPERATOR_JOB = 'clinicalsuite-operator';
const OPERATOR_NAMESPACE = 'clinicalsuite-system';
const LOAD_MS = Number(process.env['OBSERVABILITY_LOAD_MS'] ?? 20_000);
/** The service the alert test stops (SIGSTOP): nothing else in the checks needs it afterwards. */
const STOPPED: ComponentKey = 'tts';

const DCGM = new Set([
  ...dcgmCounters(readFileSync(join(FIXTURES, 'dcgm-default-counters.csv'), 'utf8')),
  ...dcgmCounters(readFileSync(join(FIXTURES, 'dcgm-dcp-metrics-included.csv'), 'utf8')),
]);
/** Series Prometheus makes itself, per target and for rules. */
const SYNTHETIC = [
  'up',
  'scrape_duration_seconds',
  'scrape_samples_scraped',
  'scrape_samples_post_metric_relabeling',
  'scrape_series_added',
  'ALERTS',
  'ALERTS_FOR_STATE',
];
/** Metric names of the operator (controller-runtime's and its own). */
const OPERATOR_METRIC =
  /^(controller_runtime_|workqueue_|rest_client_|leader_election_|clinicalsuite_operator_|clinicalsuite_suite_)/;

const missing = prometheusMissing();

/** The metric families of one /metrics text, with the sample names Prometheus stores for them. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
    if (type === 'counter' && !name.endsWith('_total')) names.add(`${name}_total`);
  }
  for (const m of text.matchAll(/^([a-zA-Z_:][\w:]*)(?:\{| )/gm)) names.add(m[1]!);
  return names;
}

describeReal(missing, 'dashboards and alerts on a real Prometheus scraping the suite', () => {
  let suite: RunningSuite | undefined;
  let operator: RunningOperator | undefined;
  let operatorSkipped: string | undefined;
  let prom: Prometheus | undefined;
  let load: LoadSummary;
  let dashboards: Dashboard[];
  let rules: Rule[];
  /** Every metric name some target exposes (plus recording rules and Prometheus's own). */
  const exposed = new Set<string>(SYNTHETIC);
  /** Names per scrape job, to say which source a metric comes from. */
  const ran = new Set<string>();
  let windowStart = 0;

  beforeAll(async () => {
    if (!existsSync(DASHBOARDS_DIR)) throw new Error(`no dashboards at ${DASHBOARDS_DIR}`);
    if (!existsSync(RULES_FILE)) throw new Error(`no alert rules at ${RULES_FILE}`);
    dashboards = loadDashboards(DASHBOARDS_DIR);
    rules = loadRules(RULES_FILE);
    for (const r of rules) if (r.kind === 'record') exposed.add(r.name);
    const [started, op] = await Promise.all([startSuite(), startOperator()]);
    suite = started;
    if ('reason' in op) operatorSkipped = op.reason;
    else operator = op;
    await suite.waitReady([...suite.urls.keys()], 120_000);
    const jobs: ScrapeJob[] = [...suite.urls].map(([key, url]) => ({
      // prometheus-operator names the job after the Kubernetes Service (<suite>-<component dir>).
      job: `${SUITE_NAME}-${COMPONENTS[key].dir}`,
      honorLabels: true,
      targets: [
        {
          target: url.replace('http://', ''),
          labels: { namespace: NAMESPACE, suite: SUITE_NAME, service: metricServiceName(key) },
        },
      ],
    }));
    if (operator) {
      jobs.push({
        job: OPERATOR_JOB,
        honorLabels: true,
        targets: [
          {
            target: operator.url.replace('http://', ''),
            labels: { namespace: OPERATOR_NAMESPACE, service: 'operator' },
          },
        ],
      });
    }
    prom = await Prometheus.start({ jobs, ruleFiles: [RULES_FILE] });
    // Prometheus syncs its targets a few seconds after start: the load begins once all are scraped.
    await prom.waitFor(
      'every target scraped once',
      async () => {
        const targets = await prom!.targets();
        return targets.length === jobs.length && targets.every((t) => t.health === 'up') ? true : undefined;
      },
      30_000,
    );
    windowStart = Date.now() / 1000;
    load = await runLoad({ urls: suite.urls, tokens: suite.tokens, durationMs: LOAD_MS });
    // A few more scrapes after the last request, and the rules evaluated on them.
    await new Promise((r) => setTimeout(r, 3000));
    for (const [key, url] of [...suite.urls, ...(operator ? ([['operator', operator.url]] as const) : [])]) {
      const text = await (await fetch(`${url}/metrics`)).text();
      for (const n of exposedNames(text)) exposed.add(n);
      ran.add(key);
    }
    for (const n of await prom.metricNames()) exposed.add(n);
  }, 240_000);

  afterAll(async () => {
    prom?.stop();
    await operator?.stop();
    await suite?.stop();
  }, 60_000);

  /** Why an expression may return nothing here: it reads only what did not run. */
  function exemption(expr: string): string | undefined {
    const names = metricNames(expr);
    const reasons = names.map((n) => {
      if (n.startsWith('DCGM_')) return 'dcgm-exporter does not run here (no GPU)';
      if (OPERATOR_METRIC.test(n) && !operator) return `the operator did not run: ${operatorSkipped ?? '?'}`;
      if (n.startsWith('medllm_') && suite?.skipped.has('medllm'))
        return `medllm did not run: ${suite.skipped.get('medllm') ?? '?'}`;
      return undefined;
    });
    if (names.length > 0 && reasons.every((r) => r !== undefined)) return reasons[0];
    const service = /service\s*=~?\s*"([^"$]+)"/.exec(expr)?.[1];
    if (service !== undefined) {
      const re = new RegExp(`^(?:${service})$`);
      const running = [...(suite?.urls.keys() ?? [])].map(metricServiceName);
      if (operator) running.push('operator');
      if (!running.some((s) => re.test(s))) return `no running service matches service=~"${service}"`;
    }
    if (/job\s*=~?\s*"[^"]*operator/.test(expr) && !operator)
      return `the operator did not run: ${operatorSkipped ?? '?'}`;
    return undefined;
  }

  /** Parses (Prometheus answers success) and returns series somewhere over the load window. */
  async function evaluate(expr: string): Promise<{ error?: string; series: number }> {
    try {
      const result = await prom!.queryRange(expr, windowStart, Date.now() / 1000, 2);
      return { series: result.result.length };
    } catch (error) {
      return { error: error instanceof PromApiError ? error.message : String(error), series: 0 };
    }
  }

  it('scrapes every running service (and the operator when it runs); the load was answered', async () => {
    const targets = await prom!.targets();
    const down = targets.filter((t) => t.health !== 'up').map((t) => `${t.scrapePool}: ${t.lastError}`);
    expect(down).toEqual([]);
    expect(targets.length).toBe(suite!.urls.size + (operator ? 1 : 0));
    // The label contract: every series of every service carries namespace, suite and its service.
    const unlabelled = await prom!.query(
      `count by (job, __name__) ({job=~"${SUITE_NAME}-.+", namespace!="${NAMESPACE}"} or {job=~"${SUITE_NAME}-.+", suite!="${SUITE_NAME}"} or {job=~"${SUITE_NAME}-.+", service=""})`,
    );
    expect(unlabelled.result.map((s) => s.metric)).toEqual([]);
    const services = await prom!.labelValues('service');
    expect(services).toEqual(
      expect.arrayContaining([...suite!.urls.keys()].map((k) => metricServiceName(k))),
    );
    // The GPU series come from the fake nvidia-smi's real H200 capture.
    const gpu = await prom!.query('clinicalsuite_gpu_memory_total_bytes');
    expect(gpu.result.length).toBeGreaterThanOrEqual(suite!.urls.size);
    expect(new Set(gpu.result.map((s) => s.metric['gpu_name']))).toEqual(new Set(['NVIDIA H200']));
    console.log(
      `scraped ${targets.length} targets (${[...ran].join(', ')}); GPU data from the fake nvidia-smi (${GPU_FIXTURE}); ` +
        `operator: ${operator ? `running, suite applied in ${operator.namespace}` : `not run: ${operatorSkipped}`}; ` +
        `load ${Math.round((load.endedAt - load.startedAt) / 1000)} s: ${JSON.stringify(load.counts)}`,
    );
    for (const key of suite!.urls.keys()) {
      const ok = Object.entries(load.counts).filter(([k]) => k.startsWith(`${key} 2`));
      expect([key, ok.length > 0]).toEqual([key, true]);
    }
  });

  it('the runner starts the text LLM with one libuv pool thread (its entry sizes the pool for the CPU; seen by the service)', async () => {
    const res = await fetch(`${suite!.urls.get('llm')}/status`, {
      headers: { authorization: `Bearer ${suite!.tokens['API_TOKEN']}` },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { uv_threadpool_size: number }).uv_threadpool_size).toBe(1);
  });

  it('every dashboard query parses and returns series; every metric it names is exported', async () => {
    expect(dashboards.length).toBeGreaterThan(0);
    const problems: string[] = [];
    const exempted: string[] = [];
    let checked = 0;
    for (const dashboard of dashboards) {
      const resolved = await resolveVariables(prom!, dashboard);
      for (const [name, r] of resolved) {
        if (r.query === undefined) continue;
        checked++;
        if (r.error) problems.push(`${dashboard.file} › variable $${name}: ${r.query}: ${r.error}`);
        else if (r.options.length === 0)
          problems.push(`${dashboard.file} › variable $${name}: ${r.query}: no values`);
        for (const n of metricNames(variableExpression(r.query)))
          if (!exposed.has(n))
            problems.push(`${dashboard.file} › variable $${name}: metric ${n} is not exported`);
      }
      for (const q of panelQueries(dashboard, resolved)) {
        checked++;
        problems.push(...(await checkQuery(q)));
      }
    }
    async function checkQuery(q: PanelQuery): Promise<string[]> {
      const out: string[] = [];
      const undef = undefinedVariables(q.target.expr, q.dashboard);
      if (undef.length > 0)
        out.push(`${where(q)}: uses undefined variable(s) ${undef.map((v) => `$${v}`).join(', ')}`);
      for (const n of metricNames(q.expr)) {
        if (n.startsWith('DCGM_')) {
          if (!DCGM.has(n)) out.push(`${where(q)}: ${n} is not one of dcgm-exporter's default counters`);
        } else if (!exposed.has(n))
          out.push(`${where(q)}: metric ${n} is not exported by any scraped target`);
      }
      const result = await evaluate(q.expr);
      if (result.error !== undefined) out.push(`${where(q)}: Prometheus refused ${q.expr}: ${result.error}`);
      else if (result.series === 0) {
        const why = exemption(q.expr);
        if (why === undefined) out.push(`${where(q)}: no series over the load window: ${q.expr}`);
        else exempted.push(`${where(q)}: ${why}`);
      }
      return out;
    }
    console.log(
      `checked ${checked} queries in ${dashboards.length} dashboards; allowed empty (${exempted.length}):\n${exempted.join('\n')}`,
    );
    expect(problems).toEqual([]);
  }, 120_000);

  it('the harness catches broken queries (the fixture dashboard of known mistakes)', async () => {
    const [broken] = loadDashboards(join(FIXTURES, 'broken'));
    const resolved = await resolveVariables(prom!, broken!);
    const found: Record<string, string[]> = {};
    for (const q of panelQueries(broken!, resolved)) {
      const list: string[] = [];
      if (undefinedVariables(q.target.expr, broken!).length > 0) list.push('undefined-variable');
      for (const n of metricNames(q.expr)) {
        if (n.startsWith('DCGM_') ? !DCGM.has(n) : !exposed.has(n)) list.push(`unknown:${n}`);
      }
      const r = await evaluate(q.expr);
      list.push(r.error !== undefined ? 'refused' : r.series === 0 ? 'empty' : 'ok');
      found[q.panel.title] = list;
    }
    expect(found).toEqual({
      'Unknown metric': ['unknown:llm_tokens_generated_total', 'empty'],
      'Does not parse': ['refused'],
      'Empty: no such label value': ['empty'],
      'Not a dcgm-exporter default counter': ['unknown:DCGM_FI_PROF_SM_OCCUPANCY', 'empty'],
      'Undefined variable': ['undefined-variable', 'empty'],
    });
  });

  it('every alert rule is loaded with health ok; every alert selector returns series', async () => {
    expect(rules.length).toBeGreaterThan(0);
    const groups = await prom!.waitFor(
      'every rule evaluated once',
      async () => {
        const g = await prom!.rules();
        return g.every((group) => group.rules.every((r) => r.health !== 'unknown')) ? g : undefined;
      },
      20_000,
    );
    const loaded = groups.flatMap((g) => g.rules);
    expect(loaded.map((r) => r.name).sort()).toEqual(rules.map((r) => r.name).sort());
    const unhealthy = loaded
      .filter((r) => r.health !== 'ok')
      .map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`);
    expect(unhealthy).toEqual([]);
    const problems: string[] = [];
    const exempted: string[] = [];
    for (const rule of rules) {
      for (const n of metricNames(rule.expr)) {
        if (n.startsWith('DCGM_') ? !DCGM.has(n) : !exposed.has(n))
          problems.push(`${rule.name}: metric ${n} is not exported by any scraped target`);
      }
      for (const selector of vectorSelectors(rule.expr)) {
        const r = await evaluate(selector);
        if (r.error !== undefined) problems.push(`${rule.name}: ${selector}: ${r.error}`);
        else if (r.series === 0) {
          const why = exemption(selector);
          if (why === undefined) problems.push(`${rule.name}: selector ${selector} returns no series`);
          else exempted.push(`${rule.name}: ${selector}: ${why}`);
        }
      }
    }
    if (exempted.length > 0) console.log(`alert selectors allowed empty:\n${exempted.join('\n')}`);
    expect(problems).toEqual([]);
  }, 60_000);

  it('the service-down alert goes pending (then firing) when a service stops answering', async () => {
    const down = rules.find((r) => r.kind === 'alert' && /down/i.test(r.name) && /\bup\b/.test(r.expr));
    if (!down) throw new Error(`no service-down alert (an alert on up) in ${RULES_FILE}`);
    const pid = suite!.rows().get(STOPPED)?.pid;
    if (!pid) throw new Error(`no pid for ${STOPPED}`);
    const service = metricServiceName(STOPPED);
    process.kill(pid, 'SIGSTOP');
    try {
      const alert = await prom!.waitFor(
        `${down.name} for service=${service}`,
        async () =>
          (await prom!.alerts()).find(
            (a) => a.labels['alertname'] === down.name && (a.labels['service'] ?? '') === service,
          ),
        30_000,
      );
      expect(['pending', 'firing']).toContain(alert.state);
      expect(alert.labels).toMatchObject({ namespace: NAMESPACE, suite: SUITE_NAME, service });
      // No other service is reported down.
      const others = (await prom!.alerts()).filter(
        (a) => a.labels['alertname'] === down.name && a.labels['service'] !== service,
      );
      expect(others).toEqual([]);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  }, 60_000);

  const renderDir = process.env['RENDER_DASHBOARDS'];
  (renderDir ? it : it.skip)(
    'renders every dashboard over the load window (RENDER_DASHBOARDS)',
    async () => {
      const files = await renderDashboards({
        prom: prom!,
        dashboards,
        start: windowStart,
        end: Date.now() / 1000,
        outDir: renderDir!,
      });
      console.log(`rendered ${files.length} dashboards into ${renderDir}:\n${files.join('\n')}`);
      expect(files.length).toBe(dashboards.length);
    },
    120_000,
  );
});
