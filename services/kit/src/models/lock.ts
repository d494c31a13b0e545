/**
 * One fetcher per destination, across processes and within one: a proper-lockfile lock on the
 * destination path (`<dest>.lock`, an mkdir lock refreshed while held). A second fetcher waits;
 * a lock whose holder died stops being refreshed and is taken over once `staleMs` old.
 */
import lockfile from 'proper-lockfile';
import { SourceFetchError } from './errors.js';

export interface LockOptions {
  /** How long to wait for another fetcher (default one hour: big models take a while). */
  readonly waitMs?: number | undefined;
  /** Age after which an unrefreshed lock is taken over (default 20 s, at least 2 s). */
  readonly staleMs?: number | undefined;
  /** How often to look whether the lock was released (default 250 ms). */
  readonly pollMs?: number | undefined;
  /** Told once when another fetcher holds the lock. */
  readonly onWait?: () => void;
}

/** Throws when the lock was lost while held (its refresh failed or someone took it over). */
export type AssertHeld = () => void;

export async function withDestinationLock<T>(
  dest: string,
  options: LockOptions,
  fn: (assertHeld: AssertHeld) => Promise<T>,
): Promise<T> {
  const staleMs = Math.max(options.staleMs ?? 20_000, 2_000);
  const pollMs = options.pollMs ?? 250;
  const waitMs = options.waitMs ?? 3_600_000;
  let compromised: Error | undefined;
  const settings = {
    realpath: false,
    stale: staleMs,
    onCompromised: (err: Error) => {
      compromised = err;
    },
  };
  if (await lockfile.check(dest, { realpath: false, stale: staleMs }).catch(() => false)) options.onWait?.();
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dest, {
      ...settings,
      retries: { retries: Math.ceil(waitMs / pollMs), factor: 1, minTimeout: pollMs, maxTimeout: pollMs },
    });
  } catch (err) {
    const reason =
      (err as NodeJS.ErrnoException).code === 'ELOCKED'
        ? `another fetcher still holds ${dest}.lock after ${Math.round(waitMs / 1000)} s`
        : `cannot lock ${dest}: ${(err as Error).message}`;
    throw new SourceFetchError(dest, reason, { retryable: false, cause: err });
  }
  try {
    return await fn(() => {
      if (compromised) {
        throw new SourceFetchError(dest, `lost the lock while fetching: ${compromised.message}`, {
          retryable: false,
          cause: compromised,
        });
      }
    });
  } finally {
    // A compromised lock is no longer ours to remove.
    await release().catch(() => undefined);
  }
}
