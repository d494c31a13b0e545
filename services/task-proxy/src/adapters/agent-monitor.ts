import type { Logger } from '@clinicalsuite/kit';
import type { AgentClient } from './agent-client.js';

/**
 * Whether the task agent is online: its `/health` probed every `intervalMs` (online only on 200),
 * and any call that found it unreachable flips it offline at once (and probes again soon). Before
 * the first probe ends the state is `unknown`; `current()` waits for that probe.
 */

export type AgentState = 'unknown' | 'online' | 'offline';

export interface AgentStatus {
  readonly state: AgentState;
  /** Why it is offline; null when online. */
  readonly detail: string | null;
  /** When the state was last established (epoch ms), null before the first probe. */
  readonly checkedAt: number | null;
}

export interface AgentMonitorOptions {
  readonly client: Pick<AgentClient, 'probe' | 'displayUrl'>;
  readonly logger: Logger;
  readonly intervalMs: number;
  readonly now: () => number;
}

export class AgentMonitor {
  private current_: AgentStatus = { state: 'unknown', detail: null, checkedAt: null };
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<AgentStatus> | undefined;
  private readonly controller = new AbortController();
  private stopped = false;

  constructor(private readonly options: AgentMonitorOptions) {}

  get status(): AgentStatus {
    return this.current_;
  }

  /** The state, after the first probe when none has ended yet. */
  async current(): Promise<AgentStatus> {
    if (this.current_.state === 'unknown') return this.check();
    return this.current_;
  }

  /** Whether the agent is online (after the first probe), and why not. */
  async online(): Promise<{ online: boolean; detail: string | null }> {
    const s = await this.current();
    return { online: s.state === 'online', detail: s.detail };
  }

  start(): void {
    void this.check();
  }

  stop(): void {
    this.stopped = true;
    this.controller.abort();
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  /** Probes now (joins a probe in flight) and schedules the next. */
  check(): Promise<AgentStatus> {
    if (this.stopped) return Promise.resolve(this.current_);
    this.running ??= this.probe().finally(() => {
      this.running = undefined;
      this.schedule();
    });
    return this.running;
  }

  /** A call found the agent unreachable: offline now; the next probe says when it is back. */
  markOffline(detail: string): void {
    if (this.stopped) return;
    this.set({ state: 'offline', detail, checkedAt: this.options.now() });
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), this.options.intervalMs);
    this.timer.unref();
  }

  private async probe(): Promise<AgentStatus> {
    const signal = AbortSignal.any([
      this.controller.signal,
      AbortSignal.timeout(Math.min(Math.max(this.options.intervalMs, 1000), 5000)),
    ]);
    const result = await this.options.client.probe(signal);
    if (this.stopped) return this.current_;
    this.set({
      state: result.state,
      detail: result.state === 'online' ? null : result.detail,
      checkedAt: this.options.now(),
    });
    return this.current_;
  }

  private set(next: AgentStatus): void {
    const previous = this.current_.state;
    this.current_ = next;
    if (previous === next.state) return;
    const url = this.options.client.displayUrl;
    if (next.state === 'online') this.options.logger.info({ agent: url }, 'task agent online');
    else
      this.options.logger.warn(
        { agent: url, detail: next.detail },
        'task agent offline: answering from the store',
      );
  }
}
