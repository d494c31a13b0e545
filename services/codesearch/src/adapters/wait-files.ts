import { access } from 'node:fs/promises';

/** Resolves true once every file exists (polling), false when stopped first. */
export async function waitForFiles(
  paths: readonly string[],
  pollMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  const exists = (p: string): Promise<boolean> =>
    access(p).then(
      () => true,
      () => false,
    );
  while (!signal.aborted) {
    if ((await Promise.all(paths.map(exists))).every(Boolean)) return true;
    await new Promise((resolve) => setTimeout(resolve, pollMs).unref());
  }
  return false;
}
