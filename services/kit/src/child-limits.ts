import { availableParallelism } from 'node:os';
import { ProcessError, lastLine } from './process.js';

/**
 * The memory and CPU-time limits every engine process runs under (README.md, "Security"): the
 * command line that sets them (util-linux's `prlimit`, which execs the command) and how a child's
 * end is read as having hit one. The process runner (process.ts) applies them to every child it
 * starts; children spawned elsewhere use `limitedCommand`, `MemoryWatch` and `childLimitFailure`.
 */

/**
 * What one child process may use, enforced by the kernel (setrlimit, set by `prlimit` before the
 * command starts, inherited by whatever it starts):
 */
export interface ChildLimits {
  /**
   * Writable private memory (RLIMIT_DATA: heap, anonymous mappings, thread stacks), in bytes. Past it
   * allocations fail: the engine reports it and stops, or stops with a partial result; either way
   * the run fails `memory_limit`. Shared libraries and files it maps read-only do not count, so the
   * figure is close to what the process really uses, on any number of cores.
   */
  readonly memoryBytes: number;
  /** CPU time of all its threads together (RLIMIT_CPU, soft = hard): SIGKILL at it, `cpu_limit`. */
  readonly cpuSeconds: number;
}

/** Limits of a runner built without any: 1 GiB, 120 s of CPU. Services pass their own (kit config). */
export const DEFAULT_CHILD_LIMITS: ChildLimits = { memoryBytes: 1024 ** 3, cpuSeconds: 120 };

/** util-linux's prlimit (essential on Debian, in every image: operator/Dockerfile). */
export const PRLIMIT = 'prlimit';

/**
 * The command line that runs `command args` under `limits`: for children that are spawned
 * elsewhere (a stream read frame by frame, a warm process), so that they are limited like the
 * runner's. `prlimit` execs the command, so the pid, the process group and signals are the command's.
 */
export function limitedCommand(
  command: string,
  args: readonly string[],
  limits: ChildLimits,
): { readonly command: string; readonly args: string[] } {
  const memory = Math.max(1, Math.floor(limits.memoryBytes));
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  return {
    command: PRLIMIT,
    args: [`--data=${String(memory)}`, `--cpu=${String(cpu)}`, '--', command, ...args],
  };
}

/**
 * What engines write on stderr when an allocation failed: strerror(ENOMEM), C++'s bad_alloc,
 * leptonica (`malloc fail`), poppler (`Out of memory`, `Bogus memory allocation size`), Python's
 * MemoryError, ffmpeg's frame buffers (`get_buffer() failed`).
 */
const MEMORY_EXHAUSTED =
  /out of memory|cannot allocate memory|bad_alloc|malloc fail|memoryerror|memory exhausted|failed to allocate|bogus memory allocation|get_buffer\(\) failed/i;
/** What prlimit writes when it cannot exec the command (exit 127: not found; 126: not executable). */
const PRLIMIT_EXEC_FAILED = /^prlimit: failed to execute /m;

/**
 * Reads a child's stderr as it arrives for the words of a failed allocation: an engine may go on
 * writing long after it (leptonica writes thousands of lines), past any tail that is kept.
 */
export class MemoryWatch {
  private tail = '';
  exhausted = false;

  add(text: string): void {
    if (!this.exhausted) this.exhausted = MEMORY_EXHAUSTED.test(this.tail + text);
    this.tail = text.slice(-64);
  }
}

/** How a child ended, for `childLimitFailure`. */
export interface ChildEnding {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The caller killed it (deadline, abort, output, killAll). */
  readonly killed: boolean;
  /** A MemoryWatch over its stderr saw a failed allocation. */
  readonly memoryExhausted: boolean;
  /** The tail of its stderr. */
  readonly stderr: string;
  /** Wall-clock seconds it ran. */
  readonly seconds: number;
}

/**
 * Why a child started with `limitedCommand` failed because of its limits (or prlimit could not start it),
 * or undefined. A memory failure is known from stderr, whatever the exit status: some engines
 * write an empty or partial result and exit 0 when an allocation fails. A SIGKILL the runner did
 * not send is the CPU limit when the process ran long enough to use that much CPU on this
 * machine's cores; otherwise (the OOM killer, another process) it stays an ordinary signal.
 */
export function childLimitFailure(
  command: string,
  limits: ChildLimits,
  end: ChildEnding,
): ProcessError | undefined {
  if ((end.code === 127 || end.code === 126) && PRLIMIT_EXEC_FAILED.test(end.stderr)) {
    return end.code === 127
      ? new ProcessError('not_found', command, `${command} is not installed (not found on PATH)`)
      : new ProcessError('exit', command, `${command} could not be started: ${lastLine(end.stderr)}`);
  }
  if (end.killed) return undefined;
  if (end.memoryExhausted) {
    return new ProcessError(
      'memory_limit',
      command,
      `${command} ran out of memory (limit ${mebibytes(limits.memoryBytes)} MiB)`,
    );
  }
  const cpuKill =
    end.signal === 'SIGXCPU' ||
    (end.signal === 'SIGKILL' && end.seconds * availableParallelism() >= limits.cpuSeconds * 0.9);
  if (cpuKill) {
    return new ProcessError(
      'cpu_limit',
      command,
      `${command} used its ${String(Math.ceil(limits.cpuSeconds))} s of CPU time and was stopped`,
    );
  }
  return undefined;
}

function mebibytes(bytes: number): string {
  return String(Math.round(bytes / 1024 ** 2));
}
