/**
 * Runs a plan: starts each component once its dependencies are up (or after a bounded wait),
 * fetches its model first, supervises it, polls its health, prints the services table on every
 * change, and stops everything in reverse dependency order.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { probe } from './health.js';
import type { PlannedModel, ProcessSpec } from './plan.js';
import { Supervisor, type Backoff, type Exit, type SupervisorEvent } from './supervisor.js';
import { describeExit, renderTable, restartingState, type Row } from './table.js';

/** Makes sure a model file is in place; throws with a message saying what was tried and what to do. */
export type ModelStep = (
  model: PlannedModel,
  context: { readonly component: ComponentKey; readonly write: (line: string) => void },
) => Promise<void>;

export interface RunnerOptions {
  readonly plan: readonly ProcessSpec[];
  readonly modelStep: ModelStep;
  readonly backoff: Backoff;
  readonly dependencyWaitMs: number;
  readonly stopTimeoutMs: number;
  readonly healthIntervalMs: number;
  /** Writes text to the user (stdout). */
  readonly write: (text: string) => void;
  /** How a service directory is named to the user (`services/llm`). */
  readonly displayDir: (spec: ProcessSpec) => string;
  /** Lines printed under every table (the tokens file, "Ctrl-C to stop"). */
  readonly footer: readonly string[];
}

type Phase =
  | 'waiting'
  | 'fetching-model'
  | 'starting'
  | 'ready'
  | 'not-ready'
  | 'unresponsive'
  | 'restarting'
  | 'missing'
  | 'stopping'
  | 'stopped';

interface Component {
  readonly spec: ProcessSpec;
  phase: Phase;
  detail: string;
  supervisor: Supervisor | null;
  restart: { delayMs: number; exit: Exit } | null;
  modelError: string | null;
  everLive: boolean;
  /** Resolves when the component is live (ready or not) or missing: what dependents wait for. */
  readonly up: Deferred;
  /** Resolves when its start is over (up, crashed once, or waited long enough): the first table waits for all. */
  readonly started: Deferred;
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const withTimeout = (promise: Promise<void>, ms: number): Promise<boolean> =>
  Promise.race([promise.then(() => true), sleep(ms, false, { ref: false })]);

const firstLine = (text: string): string => text.split('\n')[0] ?? '';

/** A ready service's detail: the model file it was started on (its MODEL_PATH), if any. */
const serving = (spec: ProcessSpec): string => (spec.model ? `model ${basename(spec.model.path)}` : '');

export class Runner {
  private readonly components: Map<ComponentKey, Component>;
  private stopping = false;
  private tablePrinted = false;
  private renderQueued = false;
  private lastTable = '';

  constructor(private readonly options: RunnerOptions) {
    this.components = new Map(
      options.plan.map((spec) => [
        spec.component,
        {
          spec,
          phase: 'waiting',
          detail: '',
          supervisor: null,
          restart: null,
          modelError: null,
          everLive: false,
          up: deferred(),
          started: deferred(),
        },
      ]),
    );
  }

  /** Starts everything; resolves once every component has started and the first table is printed. */
  async start(): Promise<void> {
    const all = [...this.components.values()];
    for (const c of all) void this.startOne(c);
    await Promise.all(all.map((c) => c.started.promise));
    if (this.stopping) return;
    this.tablePrinted = true;
    this.render();
  }

  /** Re-reads the flag after an await (where TypeScript would keep an earlier narrowing). */
  private isStopping(): boolean {
    return this.stopping;
  }

  rows(): Row[] {
    return [...this.components.values()].map((c) => ({
      name: c.spec.component,
      url: c.spec.url,
      state:
        c.phase === 'restarting' && c.restart ? restartingState(c.restart.delayMs, c.restart.exit) : c.phase,
      pid: c.supervisor?.pid ?? null,
      restarts: c.supervisor?.restarts ?? 0,
      detail: c.detail,
    }));
  }

  private say(c: Component, text: string): void {
    this.options.write(`[${c.spec.component}] ${text}\n`);
  }

  private set(c: Component, phase: Phase, detail: string): void {
    if (c.phase === phase && c.detail === detail) return;
    c.phase = phase;
    c.detail = detail;
    this.scheduleRender();
  }

  private scheduleRender(): void {
    if (!this.tablePrinted || this.stopping || this.renderQueued) return;
    this.renderQueued = true;
    setTimeout(() => {
      this.renderQueued = false;
      if (!this.stopping) this.render();
    }, 20).unref();
  }

  private render(): void {
    const table = renderTable(this.rows());
    if (table === this.lastTable) return;
    this.lastTable = table;
    this.options.write(`\n${table}\n\n${this.options.footer.join('\n')}\n`);
  }

  private async startOne(c: Component): Promise<void> {
    const { spec } = c;
    if (!existsSync(spec.entry)) {
      this.set(c, 'missing', `${this.options.displayDir(spec)} is not built or not part of this checkout`);
      c.up.resolve();
      c.started.resolve();
      return;
    }
    await this.waitForDependencies(c);
    mkdirSync(spec.dataDir, { recursive: true });
    mkdirSync(dirname(spec.logFile), { recursive: true });
    for (const model of [...(spec.model ? [spec.model] : []), ...spec.extraModels]) {
      if (!this.isStopping()) await this.fetchModel(c, model);
    }
    if (this.isStopping()) {
      c.started.resolve();
      return;
    }
    const supervisor = new Supervisor({
      entry: spec.entry,
      cwd: dirname(dirname(spec.entry)),
      env: spec.env,
      logFile: spec.logFile,
      backoff: this.options.backoff,
      onEvent: (event) => this.onProcessEvent(c, event),
    });
    c.supervisor = supervisor;
    this.set(c, 'starting', c.modelError ?? '');
    supervisor.start();
    this.say(c, `started (pid ${supervisor.pid ?? '-'}), logs: ${spec.logFile}`);
    void this.watchHealth(c);
    if (!(await withTimeout(c.up.promise, this.options.dependencyWaitMs))) {
      this.say(c, `not up after ${this.options.dependencyWaitMs / 1000} s; see ${spec.logFile}`);
    }
    c.started.resolve();
  }

  private async waitForDependencies(c: Component): Promise<void> {
    const deps = c.spec.dependsOn.flatMap((key) => this.components.get(key) ?? []);
    if (deps.length === 0) return;
    this.set(c, 'waiting', `for ${deps.map((d) => d.spec.component).join(', ')}`);
    const waited = await withTimeout(
      Promise.all(deps.map((d) => d.up.promise)).then(() => undefined),
      this.options.dependencyWaitMs,
    );
    if (!waited && !this.stopping) {
      const late = deps.filter((d) => !d.everLive && d.phase !== 'missing').map((d) => d.spec.component);
      this.say(c, `starting anyway: waited ${this.options.dependencyWaitMs / 1000} s for ${late.join(', ')}`);
    }
  }

  private async fetchModel(c: Component, model: PlannedModel): Promise<void> {
    this.set(c, 'fetching-model', model.path);
    try {
      await this.options.modelStep(model, {
        component: c.spec.component,
        write: (line) => this.say(c, line.replace(/\n$/, '')),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.say(c, `model fetch failed: ${message}`);
      this.say(c, `starting it anyway; it reports not-ready until ${model.path} is there`);
      c.modelError = `model fetch failed: ${firstLine(message)}`;
    }
  }

  private onProcessEvent(c: Component, event: SupervisorEvent): void {
    if (event.type === 'spawned') {
      c.restart = null;
      if (c.supervisor && c.supervisor.restarts > 0) this.say(c, `restarted (pid ${event.pid})`);
      this.set(c, 'starting', c.modelError ?? '');
      return;
    }
    const exit = event.type === 'exited' ? event.exit : { code: null, signal: null };
    const why = event.type === 'exited' ? describeExit(exit) : event.error;
    if (event.restartInMs === null) return;
    c.restart = { delayMs: event.restartInMs, exit };
    this.say(c, `exited (${why}); restarting in ${event.restartInMs} ms; see ${c.spec.logFile}`);
    this.set(c, 'restarting', `see ${c.spec.logFile}`);
    c.started.resolve();
  }

  private async watchHealth(c: Component): Promise<void> {
    while (!this.stopping) {
      if (c.supervisor?.pid != null && c.phase !== 'restarting') {
        const health = await probe(c.spec.url, Math.max(1000, this.options.healthIntervalMs));
        if (this.isStopping() || (c.phase as Phase) === 'restarting') continue;
        if (health.live) {
          c.everLive = true;
          this.set(
            c,
            health.ready ? 'ready' : 'not-ready',
            health.ready ? serving(c.spec) : (health.reason ?? ''),
          );
          c.up.resolve();
        } else if (c.phase === 'ready' || c.phase === 'not-ready') {
          this.set(c, 'unresponsive', health.error);
        }
      }
      await sleep(this.options.healthIntervalMs);
    }
  }

  /** Stops every component after the ones that depend on it (SIGTERM, then SIGKILL after the timeout). */
  async stop(): Promise<number> {
    this.stopping = true;
    const all = [...this.components.values()];
    const done = new Map<ComponentKey, Promise<void>>();
    const stopOne = (c: Component): Promise<void> => {
      const existing = done.get(c.spec.component);
      if (existing) return existing;
      const dependents = all.filter((d) => d.spec.dependsOn.includes(c.spec.component));
      const promise = Promise.all(dependents.map(stopOne)).then(async () => {
        c.phase = 'stopping';
        const result = await c.supervisor?.stop(this.options.stopTimeoutMs);
        c.phase = 'stopped';
        if (result) {
          const how = result.killed
            ? `killed after ${this.options.stopTimeoutMs / 1000} s`
            : describeExit(result.exit);
          this.say(c, `stopped (${how})`);
        }
      });
      done.set(c.spec.component, promise);
      return promise;
    };
    await Promise.all(all.map(stopOne));
    return all.filter((c) => c.supervisor !== null).length;
  }

  /** SIGKILL every process now and wait up to `timeoutMs` for them to be gone. */
  async killAll(timeoutMs: number): Promise<void> {
    this.stopping = true;
    const supervisors = [...this.components.values()].flatMap((c) => c.supervisor ?? []);
    await Promise.all(supervisors.map((s) => s.killAndWait(timeoutMs)));
  }

  /** SIGKILL every process now. Synchronous, so it can run in an exit handler. */
  kill(): void {
    this.stopping = true;
    for (const c of this.components.values()) c.supervisor?.kill();
  }
}
