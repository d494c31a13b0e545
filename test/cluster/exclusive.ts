import { afterAll, beforeAll } from '@jest/globals';
import { closeSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import lockfile from 'proper-lockfile';

/**
 * The test files that run an operator or install the chart on the shared test control plane take
 * it in turn: the chart's release `cs` has cluster-scoped objects (a ValidatingAdmissionPolicy)
 * that two installs in different namespaces fight over; an operator watching every namespace
 * (test/cluster/operator.test.ts) would reconcile the suite that
 * test/cluster/least-privilege.test.ts leaves in an unwatched namespace; and two operators on one
 * suite make each other's writes. Held from the file's first hook to its last (jest may run these
 * files on its two workers at once).
 */
async function takeControlPlane(): Promise<() => Promise<void>> {
  const file = join(tmpdir(), 'clinicalsuite-test-control-plane.lock');
  closeSync(openSync(file, 'a'));
  const release = await lockfile.lock(file, {
    retries: { retries: 900, minTimeout: 1000, maxTimeout: 1000, factor: 1 },
    stale: 60_000,
  });
  return async () => {
    // The file's operators were sent SIGTERM in its own afterAll: let them go first.
    await sleep(3000);
    await release();
  };
}

/**
 * Takes the control plane in the calling file's first hook and gives it back in its last: call
 * this before the file's other beforeAll and afterAll hooks.
 */
export function holdControlPlaneForThisFile(): void {
  let release: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    release = await takeControlPlane();
  }, 20 * 60_000);
  afterAll(async () => {
    await release?.();
  });
}
