/**
 * A real Prometheus server (Debian's `prometheus` 2.42, /usr/bin/prometheus) for tests: its own
 * temp directory (config, TSDB), a free port, 1 s scrape and rule evaluation; `stop()` (also run
 * when the test process exits without it) leaves no prometheus behind.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from '../../kit/helpers.js';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';

export const PROMETHEUS_BIN = process.env['PROMETHEUS_BIN'] ?? '/usr/bin/prometheus';
export const PROMTOOL_BIN = process.env['PROMTOOL_BIN'] ?? '/usr/bin/promtool';

/** Why Prometheus cannot run here, or null when it can. */
export function prometheusMissing(): string | null {
  if (!existsSync(PROMETHEUS_BIN)) return `${PROMETHEUS_BIN} is not installed (Debian package prometheus)`;
  const r = spawnSync(PROMETHEUS_BIN, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0) return `${PROMETHEUS_BIN} --version failed: ${r.stderr || r.error?.message}`;
  return null;
}

/** One scrape job: static targets (`host:port`) with static labels, as prometheus.yml writes it. */
export interface ScrapeJob {
  readonly job: string;
  readonly targets: readonly { readonly target: string; readonly labels: Record<string, string> }[];
  /** Keep the target's own labels (`service`, …) over the target labels: what the ServiceMonitor's honorLabels does. */
  readonly honorLabels?: boolean;
  readonly metricsPath?: string;
}

export interface PrometheusOptions {
  readonly jobs: readonly ScrapeJob[];
  readonly ruleFiles?: readonly string[];
  readonly scrapeIntervalS?: number;
  readonly evaluationIntervalS?: number;
}

export interface PromSample {
  readonly metric: Record<string, string>;
  readonly value?: [number, string];
  readonly values?: [number, string][];
}

export interface QueryResult {
  readonly resultType: 'vector' | 'matrix' | 'scalar' | 'string';
  readonly result: PromSample[];
}

export interface RuleGroup {
  readonly name: string;
  readonly file: string;
  readonly rules: {
    readonly name: string;
    readonly query: string;
    readonly type: 'alerting' | 'recording';
    readonly health: string;
    readonly lastError?: string;
    readonly state?: string;
    readonly labels?: Record<string, string>;
    readonly alerts?: { labels: Record<string, string>; state: string }[];
  }[];
}

export interface Target {
  readonly labels: Record<string, string>;
  readonly scrapePool: string;
  readonly scrapeUrl: string;
  readonly health: 'up' | 'down' | 'unknown';
  readonly lastError: string;
}

/** An error Prometheus's API answered (`status: error`), with its errorType and message. */
export class PromApiError extends Error {
  constructor(
    readonly path: string,
    readonly errorType: string,
    message: string,
  ) {
    super(`${path}: ${errorType}: ${message}`);
  }
}

/** Prometheus's HTTP API at `url`: this test's own server, or one running elsewhere (a pod). */
export class PrometheusApi {
  constructor(readonly url: string) {}

  protected async api<T>(path: string, params: Record<string, string> = {}): Promise<T> {
    const body = new URLSearchParams(params);
    const res = await fetch(`${this.url}${path}`, {
      method: Object.keys(params).length > 0 ? 'POST' : 'GET',
      ...(Object.keys(params).length > 0 ? { body } : {}),
      signal: AbortSignal.timeout(15_000),
    });
    const json = (await res.json()) as { status: string; data: T; errorType?: string; error?: string };
    if (json.status !== 'success') throw new PromApiError(path, json.errorType ?? '?', json.error ?? '?');
    return json.data;
  }

  /** An instant query (now, or at `time` in seconds). */
  query(expr: string, time?: number): Promise<QueryResult> {
    return this.api('/api/v1/query', { query: expr, ...(time === undefined ? {} : { time: String(time) }) });
  }

  /** A range query; times in seconds since the epoch. */
  queryRange(expr: string, start: number, end: number, stepS: number): Promise<QueryResult> {
    return this.api('/api/v1/query_range', {
      query: expr,
      start: String(start),
      end: String(end),
      step: String(stepS),
    });
  }

  /** Every series a selector matches over the last `lookbackS` seconds (what label_values() reads). */
  series(match: string, lookbackS = 600): Promise<Record<string, string>[]> {
    const now = Date.now() / 1000;
    return this.api('/api/v1/series', {
      'match[]': match,
      start: String(now - lookbackS),
      end: String(now),
    });
  }

  /** Every value of one label (what `label_values(label)` reads). */
  labelValues(label: string): Promise<string[]> {
    return this.api(`/api/v1/label/${encodeURIComponent(label)}/values`);
  }

  async rules(): Promise<RuleGroup[]> {
    return (await this.api<{ groups: RuleGroup[] }>('/api/v1/rules')).groups;
  }

  async alerts(): Promise<{ labels: Record<string, string>; state: string }[]> {
    return (await this.api<{ alerts: { labels: Record<string, string>; state: string }[] }>('/api/v1/alerts'))
      .alerts;
  }

  async targets(): Promise<Target[]> {
    return (await this.api<{ activeTargets: Target[] }>('/api/v1/targets')).activeTargets;
  }

  /** Every metric name Prometheus holds (scraped, synthetic `up`/`scrape_*`, and ALERTS once rules fire). */
  metricNames(): Promise<string[]> {
    return this.api('/api/v1/label/__name__/values');
  }

  /** Waits until `probe` returns a value (not undefined), polling every 500 ms. */
  async waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: Error | undefined;
    for (;;) {
      try {
        const value = await probe();
        if (value !== undefined) return value;
      } catch (error) {
        last = error instanceof Error ? error : new Error(String(error));
      }
      if (Date.now() > deadline)
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`,
        );
      await sleep(500);
    }
  }
}

export class Prometheus extends PrometheusApi {
  private constructor(
    readonly dir: string,
    url: string,
    private readonly child: ChildProcess,
    private readonly log: () => string,
  ) {
    super(url);
  }

  /** Writes prometheus.yml, checks it (and the rule files) with promtool, starts, waits for /-/ready. */
  static async start(options: PrometheusOptions): Promise<Prometheus> {
    const dir = mkdtempSync(join(tmpdir(), 'cs-prometheus-'));
    const port = await freePort();
    const config = {
      global: {
        scrape_interval: `${options.scrapeIntervalS ?? 1}s`,
        scrape_timeout: `${options.scrapeIntervalS ?? 1}s`,
        evaluation_interval: `${options.evaluationIntervalS ?? 1}s`,
      },
      rule_files: (options.ruleFiles ?? []).map((f) => resolve(f)),
      scrape_configs: options.jobs.map((job) => ({
        job_name: job.job,
        honor_labels: job.honorLabels ?? true,
        metrics_path: job.metricsPath ?? '/metrics',
        static_configs: job.targets.map((t) => ({ targets: [t.target], labels: t.labels })),
      })),
    };
    const configFile = join(dir, 'prometheus.yml');
    writeFileSync(configFile, stringify(config));
    const check = spawnSync(PROMTOOL_BIN, ['check', 'config', configFile], { encoding: 'utf8' });
    if (check.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`promtool check config failed:\n${check.stdout}${check.stderr}`);
    }
    let log = '';
    const child = spawn(
      PROMETHEUS_BIN,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--web.enable-lifecycle',
        '--storage.tsdb.retention.time=1h',
        '--log.level=warn',
      ],
      // In the test's process group (a Ctrl-C of the test reaches it); it starts no children.
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const append = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.length > 200_000) log = log.slice(-100_000);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    const prom = new Prometheus(dir, `http://127.0.0.1:${port}`, child, () => log);
    live.add(prom);
    try {
      await prom.waitReady(30_000);
    } catch (error) {
      prom.stop();
      throw error;
    }
    return prom;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  output(): string {
    return this.log();
  }

  private async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(
          `prometheus exited (${this.child.exitCode ?? this.child.signalCode}):\n${this.log()}`,
        );
      try {
        const res = await fetch(`${this.url}/-/ready`, { signal: AbortSignal.timeout(1000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`prometheus not ready after ${timeoutMs} ms:\n${this.log()}`);
      await sleep(100);
    }
  }

  /** SIGTERM, SIGKILL after 5 s; removes the temp dir. Synchronous so it can run anywhere. */
  stop(): void {
    live.delete(this);
    const pid = this.child.pid;
    if (pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      kill(pid, 'SIGTERM');
      const deadline = Date.now() + 5000;
      while (alive(pid) && Date.now() < deadline) spawnSync('sleep', ['0.05']);
      if (alive(pid)) kill(pid, 'SIGKILL');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie still answers signal 0; /proc says whether it is only that.
    const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

const live = new Set<Prometheus>();
// A test process that exits without calling stop() still leaves no prometheus behind.
process.on('exit', () => {
  for (const prom of live) prom.stop();
});
