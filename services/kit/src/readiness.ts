/**
 * Whether the service can do its work (model loaded, store open), and if not, why, in words a user
 * can act on: "model file not found: /models/llm/x.gguf — run `npm run models -- fetch llm`".
 * `/health` and `/readyz` answer 503 until ready; gated routes answer 503 too.
 *
 * Readiness is the conjunction of conditions: the service's own (`setReady`/`setNotReady` on the
 * Readiness itself) and one per part that can be down on its own (each kit resource, an LLM
 * upstream, a change feed), made with `condition()`. The service is ready when every condition is;
 * the reason is the first unmet condition's, in the order they were made (docs/architecture.md, "How a service is assembled").
 */

/** One thing the service needs, which a part sets; Readiness itself is one too. */
export interface ReadinessSignal {
  readonly ready: boolean;
  /** Why not; `undefined` when ready. */
  readonly reason: string | undefined;
  setReady(): void;
  setNotReady(reason: string): void;
}

type ConditionState = { ready: true } | { ready: false; reason: string };

class Condition implements ReadinessSignal {
  state: ConditionState;

  constructor(
    initialReason: string | undefined,
    private readonly changed: () => void,
  ) {
    this.state = initialReason === undefined ? { ready: true } : { ready: false, reason: initialReason };
  }

  get ready(): boolean {
    return this.state.ready;
  }

  get reason(): string | undefined {
    return this.state.ready ? undefined : this.state.reason;
  }

  setReady(): void {
    if (this.state.ready) return;
    this.state = { ready: true };
    this.changed();
  }

  setNotReady(reason: string): void {
    const before = this.reason;
    this.state = { ready: false, reason };
    if (before !== reason) this.changed();
  }
}

export class Readiness implements ReadinessSignal {
  private readonly own: Condition;
  private readonly conditions: Condition[] = [];
  private readonly listeners: ((ready: boolean) => void)[] = [];
  private shuttingDown = false;
  private wasReady: boolean;

  constructor(initialReason = 'starting') {
    this.own = new Condition(initialReason, () => this.update());
    this.conditions.push(this.own);
    this.wasReady = false;
  }

  get ready(): boolean {
    return !this.shuttingDown && this.conditions.every((c) => c.ready);
  }

  /** Why the service is not ready; `undefined` when it is. */
  get reason(): string | undefined {
    if (this.shuttingDown) return 'shutting down';
    for (const c of this.conditions) if (!c.ready) return c.reason;
    return undefined;
  }

  /** The service's own condition met (the others still count). */
  setReady(): void {
    this.own.setReady();
  }

  setNotReady(reason: string): void {
    this.own.setNotReady(reason);
  }

  /**
   * A further condition, unmet with `initialReason` until its part says otherwise (met from the
   * start without one).
   */
  condition(initialReason?: string): ReadinessSignal {
    const condition = new Condition(initialReason, () => this.update());
    this.conditions.push(condition);
    this.update();
    return condition;
  }

  /** Not ready for good: 'shutting down' stays the reason whatever the service's parts say after. */
  setShuttingDown(): void {
    this.shuttingDown = true;
    this.update();
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Called when the service as a whole becomes ready or stops being ready. */
  onChange(listener: (ready: boolean) => void): void {
    this.listeners.push(listener);
  }

  private update(): void {
    const ready = this.ready;
    if (ready === this.wasReady) return;
    this.wasReady = ready;
    for (const listener of this.listeners) listener(ready);
  }
}
