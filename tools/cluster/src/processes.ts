/**
 * Detached background processes with pid files and log files, and a way to stop them that never
 * touches a process that is not ours: a pid counts only while /proc/<pid>/cmdline still names a
 * binary of ours (pids are reused after a reboot or a crash), matched by `isOurs(argv)`.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

export interface StartedProcess {
  pid: number;
  bin: string;
  log: string;
  pidFile: string;
}

/** Starts `bin args` in its own process group, detached from us, stdout+stderr into `log`. */
export async function startDetached(
  bin: string,
  args: string[],
  log: string,
  pidFile: string,
): Promise<StartedProcess> {
  const fd = openSync(log, 'w');
  try {
    const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd], env: process.env });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => {
        if (child.pid === undefined) reject(new Error(`${bin} did not start`));
        else resolve(child.pid);
      });
    });
    child.unref();
    await writeFile(pidFile, `${pid}\n`);
    return { pid, bin, log, pidFile };
  } finally {
    closeSync(fd);
  }
}

export type Matcher = (argv: string[]) => boolean;

/** A process's argv, or undefined when it is gone. */
function argvOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return undefined;
  }
}

/** True while `pid` is alive and is still a program of ours (not a zombie, not a reused pid). */
export function isOurProcess(pid: number, isOurs: Matcher): boolean {
  try {
    const argv = argvOf(pid);
    if (!argv || !isOurs(argv)) return false;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export async function readPid(pidFile: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt(await readFile(pidFile, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    // The whole group: the component and anything it started. Fall back to the pid alone.
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  }
}

/**
 * SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. Returns false when the
 * pid was not (or no longer) ours, so nothing was signalled.
 */
export async function stopProcess(pid: number, isOurs: Matcher, graceMs = 10_000): Promise<boolean> {
  if (!isOurProcess(pid, isOurs)) return false;
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isOurProcess(pid, isOurs)) {
    if (Date.now() > deadline) {
      signal(pid, 'SIGKILL');
      for (let i = 0; i < 50 && isOurProcess(pid, isOurs); i++) await sleep(100);
      break;
    }
    await sleep(100);
  }
  return true;
}

/** Every live process whose argv `isOurs` claims (a scan of /proc: finds what lost its pid file). */
export async function findProcesses(isOurs: Matcher): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    const pid = Number(entry);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isOurProcess(pid, isOurs)) pids.push(pid);
  }
  return pids;
}

export async function removePidFile(pidFile: string): Promise<void> {
  await rm(pidFile, { force: true });
}

/** The last `lines` lines of a log, for error messages. */
export async function tail(file: string, lines = 20): Promise<string> {
  try {
    const text = await readFile(file, 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
