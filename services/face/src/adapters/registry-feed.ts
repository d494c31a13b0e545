import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger, ReadinessSignal } from '@clinicalsuite/kit';
import { RegistryMirror } from '../domain/registry-mirror.js';
import type { RegistryFeed } from './registry.js';

/**
 * Whether this replica hears the other replicas' registry changes (always with SQLite). While it
 * does not, its index may hold persons deleted elsewhere: its readiness condition is unmet, so the
 * service is not ready (recognition answers 503) whatever the models say. When the feed is back,
 * the whole registry is read again, since what changed meanwhile is not replayed.
 */

const FEED_DOWN =
  'lost the connection that keeps the registry index in step with other replicas (PostgreSQL LISTEN): reconnecting';

/** The pause before the `attempt`-th retry of a registry read: doubling from 250 ms up to 30 s. */
export const retryPause = (attempt: number): Promise<void> => sleep(Math.min(30_000, 250 * 2 ** attempt));

/** The registry in memory, whose failed reads of a person are logged and retried. */
export function registryMirror(logger: Logger): RegistryMirror {
  return new RegistryMirror({
    onError: (error, personId) => {
      logger.error({ err: error, personId }, 'could not read a changed person from the registry: retrying');
    },
    retryDelay: retryPause,
  });
}

export class RegistryFeedWatch implements RegistryFeed {
  /** Bumped by every loss: a read begun for an earlier return does not mark the feed up. */
  private epoch = 0;
  private closed = false;

  constructor(
    private readonly mirror: RegistryMirror,
    /** Its own readiness condition (met while the feed is up). */
    private readonly condition: ReadinessSignal,
    private readonly logger: Logger,
  ) {}

  get up(): boolean {
    return this.condition.ready;
  }

  lost(error: Error): void {
    this.epoch++;
    this.logger.error({ err: error }, 'the registry change feed is down: reconnecting');
    this.condition.setNotReady(FEED_DOWN);
  }

  restored(): void {
    const epoch = this.epoch;
    this.logger.warn('the registry change feed is back: reading the registry again');
    void (async () => {
      for (let attempt = 0; epoch === this.epoch && !this.closed; attempt++) {
        try {
          await this.mirror.load();
        } catch (error) {
          this.logger.error({ err: error }, 'could not read the registry again after reconnecting: retrying');
          await retryPause(attempt);
          continue;
        }
        if (epoch !== this.epoch) return;
        this.logger.info('the registry index is in step again');
        this.condition.setReady();
        return;
      }
    })();
  }

  resync(): void {
    // While the feed is down, its return reads the registry anyway; a failed read waits for the next.
    if (!this.up || this.closed || this.mirror.people === undefined) return;
    this.mirror.load().catch((error: unknown) => {
      this.logger.error({ err: error }, 'could not read the registry again (periodic): retrying at the next');
    });
  }

  /** Stops reading the registry again. */
  close(): void {
    this.closed = true;
  }
}
