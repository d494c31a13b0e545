/**
 * Whether the service can do its work (model loaded, store open), and if not, why, in words a user
 * can act on: "model file not found: /models/llm/x.gguf — run `npm run models -- fetch llm`".
 * `/health` and `/readyz` answer 503 until ready; gated routes answer 503 too.
 */
export class Readiness {
  private state: { ready: true } | { ready: false; reason: string };
  private readonly listeners: ((ready: boolean) => void)[] = [];
  private shuttingDown = false;

  constructor(initialReason = 'starting') {
    this.state = { ready: false, reason: initialReason };
  }

  get ready(): boolean {
    return this.state.ready;
  }

  /** Why the service is not ready; `undefined` when it is. */
  get reason(): string | undefined {
    return this.state.ready ? undefined : this.state.reason;
  }

  /** Ready again, unless the service is shutting down (a reconnect must not take it back in). */
  setReady(): void {
    if (this.shuttingDown) return;
    const changed = !this.state.ready;
    this.state = { ready: true };
    if (changed) this.emit();
  }

  setNotReady(reason: string): void {
    if (this.shuttingDown) return;
    const changed = this.state.ready;
    this.state = { ready: false, reason };
    if (changed) this.emit();
  }

  /** Not ready for good: 'shutting down' stays the reason whatever the service's parts say after. */
  setShuttingDown(): void {
    this.setNotReady('shutting down');
    this.shuttingDown = true;
  }

  onChange(listener: (ready: boolean) => void): void {
    this.listeners.push(listener);
  }

  private emit(): void {
    for (const listener of this.listeners) listener(this.state.ready);
  }
}
