import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@clinicalsuite/kit';

/**
 * What keeps a llama-server from outliving the front that started it (Linux):
 *
 * - {@link parentDeathLauncher}: util-linux's `setpriv --pdeathsig KILL -- <binary> …` sets the
 *   child's parent-death signal and then execs llama-server (same pid; the setting survives exec),
 *   so the kernel kills it the moment the front dies, SIGKILL included. Node cannot call prctl
 *   itself; setpriv is in util-linux, which Debian and Ubuntu always install.
 * - {@link BackendPidFile}: the backend's pid (with its start time, so a reused pid is never
 *   mistaken for it) and the front's, in the service's data directory. A front starting where a
 *   previous one died without setpriv (or in the instant before setpriv armed the signal) kills
 *   the backend that front left, after checking that it is that very process and that its front
 *   is really gone.
 */

/** A process's identity: pid plus start time (clock ticks since boot), which a reused pid does not share. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTime: string;
}

/** The start time of `pid` from /proc (field 22 of stat), or null when there is no such live process. */
export function processStartTime(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): a zombie has exited already.
  if (fields[0] === 'Z' || fields[0] === 'X') return null;
  return fields[19] ?? null;
}

/** The argv of `pid` from /proc, or null. */
function processArgv(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return null;
  }
}

/** Whether `id` names the same live process it named when it was recorded. */
export function isAlive(id: ProcessIdentity): boolean {
  return processStartTime(id.pid) === id.startTime;
}

export interface Launcher {
  readonly command: string;
  /** Put before the binary and its arguments. */
  readonly args: readonly string[];
}

/**
 * `setpriv --pdeathsig KILL --` when `setpriv` runs and knows the option (util-linux 2.33+), else
 * null (the caller says so in its log). Checked once, by running it.
 */
export function parentDeathLauncher(setpriv = 'setpriv'): Launcher | null {
  const args = ['--pdeathsig', 'KILL', '--'];
  const probe = spawnSync(setpriv, [...args, 'true'], { stdio: 'ignore', timeout: 5000 });
  return probe.status === 0 ? { command: setpriv, args } : null;
}

interface PidRecord {
  readonly backend: ProcessIdentity;
  readonly binary: string;
  readonly front: ProcessIdentity;
}

export class BackendPidFile {
  constructor(
    private readonly path: string,
    private readonly logger: Logger,
  ) {}

  /** Records the backend just started (by this process). */
  record(pid: number, binary: string): void {
    const startTime = processStartTime(pid);
    const front = processStartTime(process.pid);
    if (startTime === null || front === null) return;
    const record: PidRecord = {
      backend: { pid, startTime },
      binary,
      front: { pid: process.pid, startTime: front },
    };
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      writeFileSync(`${this.path}.tmp`, `${JSON.stringify(record)}\n`);
      renameSync(`${this.path}.tmp`, this.path);
    } catch (error) {
      this.logger.warn(
        { component: 'llama-server', path: this.path, err: (error as Error).message },
        'could not write the backend pid file',
      );
    }
  }

  /** Forgets the backend `pid` once it has exited (a later record is left alone). */
  clear(pid: number): void {
    const record = this.read();
    if (record !== null && record.backend.pid === pid && record.front.pid === process.pid)
      rmSync(this.path, { force: true });
  }

  /**
   * Kills the backend a previous front left running: only when the file's backend is still the
   * process it recorded (pid and start time), still runs `binary`, and its front is gone (so two
   * fronts sharing a directory by mistake never kill each other's backend). Waits up to
   * `waitMs` for it to go; returns the pid it killed, or null.
   */
  async reapStale(binary: string, waitMs = 3000): Promise<number | null> {
    const record = this.read();
    if (record === null) return null;
    const { backend, front } = record;
    const ours = front.pid === process.pid && front.startTime === processStartTime(process.pid);
    if (ours || isAlive(front)) return null;
    const argv = processArgv(backend.pid);
    const sameBinary =
      record.binary === binary && argv !== null && argv.slice(0, 2).some((a) => a === binary);
    if (!isAlive(backend) || !sameBinary) {
      rmSync(this.path, { force: true });
      return null;
    }
    this.logger.warn(
      { component: 'llama-server', pid: backend.pid, frontPid: front.pid },
      'killing the llama-server a previous instance left running',
    );
    try {
      process.kill(backend.pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
    for (let waited = 0; waited < waitMs && isAlive(backend); waited += 20) await sleep(20);
    rmSync(this.path, { force: true });
    return backend.pid;
  }

  private read(): PidRecord | null {
    try {
      const value = JSON.parse(readFileSync(this.path, 'utf8')) as Partial<PidRecord>;
      const ok = (id: unknown): id is ProcessIdentity =>
        typeof id === 'object' &&
        id !== null &&
        Number.isInteger((id as ProcessIdentity).pid) &&
        (id as ProcessIdentity).pid > 0 &&
        typeof (id as ProcessIdentity).startTime === 'string';
      if (!ok(value.backend) || !ok(value.front) || typeof value.binary !== 'string') return null;
      return value as PidRecord;
    } catch {
      return null;
    }
  }
}
