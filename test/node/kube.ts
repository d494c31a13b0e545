/**
 * kubectl and helm against the real-node cluster, as a platform team runs them: the pinned
 * binaries of test/cluster/build.sh with the cluster's admin kubeconfig.
 */
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

export interface Kube {
  kubectl(
    args: readonly string[],
    options?: { input?: string; timeoutMs?: number; env?: Record<string, string> },
  ): Promise<Run>;
  /** kubectl that must succeed: its stdout, or an error with its stderr. */
  ok(args: readonly string[], options?: { input?: string; timeoutMs?: number }): Promise<string>;
  /** `kubectl get … -o json`, parsed; undefined when NotFound. */
  json<T>(args: readonly string[]): Promise<T | undefined>;
  helm(args: readonly string[], timeoutMs?: number): Promise<string>;
}

function exec(
  bin: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  input?: string,
  timeoutMs = 120_000,
) {
  return new Promise<Run>((resolve) => {
    const child = execFile(
      bin,
      [...args],
      { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, out: stdout, err: stderr || (error && !stderr ? error.message : '') });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

export function kube(kubectlBin: string, helmBin: string, kubeconfig: string): Kube {
  const env = { ...process.env, KUBECONFIG: kubeconfig };
  const kubectl: Kube['kubectl'] = (args, options) =>
    exec(kubectlBin, args, { ...env, ...options?.env }, options?.input, options?.timeoutMs);
  const ok: Kube['ok'] = async (args, options) => {
    const r = await kubectl(args, options);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.err.trim()}`);
    return r.out;
  };
  return {
    kubectl,
    ok,
    async json<T>(args: readonly string[]) {
      const r = await kubectl([...args, '-o', 'json']);
      if (r.code !== 0) {
        if (/NotFound|not found/.test(r.err)) return undefined;
        throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.err.trim()}`);
      }
      return JSON.parse(r.out) as T;
    },
    async helm(args, timeoutMs = 300_000) {
      const r = await exec(helmBin, args, env, undefined, timeoutMs);
      if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed (${r.code}): ${r.err.trim()}`);
      return r.out;
    },
  };
}

/** Polls `check` every second until it returns a value (not undefined) or the time is up. */
export async function until<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
  explain?: () => Promise<string>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const detail = explain ? await explain().catch((e: unknown) => String(e)) : '';
      const lastError = last instanceof Error ? ` (last error: ${last.message})` : '';
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${lastError}\n${detail}`);
    }
    await sleep(1_000);
  }
}

export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

export interface SuiteObject {
  readonly status?: {
    readonly conditions?: readonly Condition[];
    readonly services?: Record<string, { readonly conditions?: readonly Condition[] }>;
  };
}

/** A service's condition of the given type in a suite's status. */
export function serviceCondition(
  suite: SuiteObject | undefined,
  service: string,
  type: string,
): Condition | undefined {
  return suite?.status?.services?.[service]?.conditions?.find((c) => c.type === type);
}
