import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ReadinessSignal } from './readiness.js';

export interface WaitForModelFileOptions {
  readonly readiness: ReadinessSignal;
  /** What the user can do, e.g. "run `npm run models -- fetch llm` or place the file there". */
  readonly hint: string;
  readonly pollMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Resolves once `path` is a non-empty file. Until then the service is not ready, with a reason
 * that names the missing file and what to do about it; a model placed there later is picked up
 * without a restart.
 */
export async function waitForModelFile(path: string, options: WaitForModelFileOptions): Promise<void> {
  let announced = false;
  for (;;) {
    const size = await stat(path).then(
      (s) => (s.isFile() ? s.size : 0),
      () => 0,
    );
    if (size > 0) return;
    if (!announced) {
      options.readiness.setNotReady(`model file not found: ${path} — ${options.hint}`);
      announced = true;
    }
    await sleep(options.pollMs ?? 2000, undefined, options.signal ? { signal: options.signal } : {});
  }
}
