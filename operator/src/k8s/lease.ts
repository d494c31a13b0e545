/**
 * Leader election on a coordination.k8s.io Lease, as client-go does it: the holder renews the lease
 * every `renewMs`; another candidate takes it over only once it has not been renewed for
 * `leaseMs`. Updates are compare-and-swap on resourceVersion, so two candidates never both win.
 */
import { KubeApiError, type KubeClient } from './client.js';

// A type alias, not an interface, so it fits KubeObjectLike's index signature.
type Lease = {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
};

export interface LeaderElectionOptions {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseMs?: number;
  readonly renewMs?: number;
  readonly now?: () => Date;
}

export class LeaderElector {
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly now: () => Date;

  constructor(
    private readonly client: KubeClient,
    private readonly options: LeaderElectionOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 15_000;
    this.renewMs = options.renewMs ?? 2_000;
    this.now = options.now ?? (() => new Date());
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Resolves once this candidate leads; `onLost` runs if it stops leading later. */
  async run(onLost: () => void): Promise<void> {
    for (;;) {
      if (await this.tryAcquireOrRenew()) break;
      await new Promise((r) => setTimeout(r, this.renewMs));
    }
    this.leading = true;
    const renew = async (): Promise<void> => {
      const ok = await this.tryAcquireOrRenew().catch(() => false);
      if (!ok) {
        this.leading = false;
        this.stop();
        onLost();
        return;
      }
      this.timer = setTimeout(() => void renew(), this.renewMs);
    };
    this.timer = setTimeout(() => void renew(), this.renewMs);
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One attempt: true when this candidate holds the lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const ref = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace },
    } as const;
    const now = this.now();
    const stamp = now.toISOString().replace('Z', '000Z'); // MicroTime
    const current = await this.client.read<Lease>(ref);
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.leaseMs / 1000),
      renewTime: stamp,
    };
    try {
      if (current === undefined) {
        await this.client.create<Lease>({
          ...ref,
          spec: { ...spec, acquireTime: stamp, leaseTransitions: 0 },
        });
        return true;
      }
      const held = current.spec.holderIdentity;
      const renewed = current.spec.renewTime === undefined ? 0 : Date.parse(current.spec.renewTime);
      const expired = now.getTime() - renewed > (current.spec.leaseDurationSeconds ?? 15) * 1000;
      if (held !== identity && held !== undefined && held !== '' && !expired) return false;
      const transition = held !== identity;
      await this.client.replace<Lease>({
        ...current,
        spec: {
          ...current.spec,
          ...spec,
          ...(transition
            ? { acquireTime: stamp, leaseTransitions: (current.spec.leaseTransitions ?? 0) + 1 }
            : {}),
        },
      });
      return true;
    } catch (error) {
      if (error instanceof KubeApiError && (error.status === 409 || error.status === 422)) return false;
      throw error;
    }
  }
}
