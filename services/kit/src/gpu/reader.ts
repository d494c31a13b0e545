import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { NVIDIA_SMI_ARGS, parseNvidiaSmiCsv, type GpuInfo } from './parse.js';
import { filterVisibleDevices } from './visible-devices.js';

/** What a service knows about its GPUs at one moment. Never thrown; failures are `available: false`. */
export interface GpuStatus {
  available: boolean;
  device: 'cuda' | 'cpu';
  /** Only the GPUs this process may use (after `visibleDevices`), in CUDA order. */
  gpus: GpuInfo[];
  /** Why GPUs could not be read. Absent when all went well and when there is no nvidia-smi at all. */
  error?: string;
  /** ISO time the reading was taken. */
  readAt: string;
}

/** Anything the metrics and the HTTP endpoints can read a status from. */
export interface GpuStatusSource {
  read(): Promise<GpuStatus>;
}

/** Runs a binary without a shell; rejects like `execFile` does (`code`, `killed`, `signal`, `stderr`). */
export type CommandRunner = (
  file: string,
  args: readonly string[],
  options: { timeout: number },
) => Promise<{ stdout: string }>;

const execFileAsync = promisify(execFile);

/** The default runner: `execFile`, no shell, killed with SIGKILL at the timeout. */
export const execFileRunner: CommandRunner = async (file, args, { timeout }) => {
  const { stdout } = await execFileAsync(file, [...args], {
    timeout,
    killSignal: 'SIGKILL',
    encoding: 'utf8',
    maxBuffer: 1024 * 1024,
    windowsHide: true,
  });
  return { stdout };
};

export interface GpuStatusReaderOptions {
  /** Path or name of the nvidia-smi binary. Default `nvidia-smi` (looked up on PATH). */
  binary?: string;
  /** Kill nvidia-smi after this long. Default 3000. */
  timeoutMs?: number;
  /** Serve a reading this long before running nvidia-smi again. Default 2000; 0 disables the cache. */
  cacheMs?: number;
  /** The process's CUDA_VISIBLE_DEVICES (see `filterVisibleDevices`); undefined shows every GPU. */
  visibleDevices?: string | undefined;
  runner?: CommandRunner;
  /** Clock in epoch ms, for tests. */
  now?: () => number;
}

export const DEFAULT_GPU_TIMEOUT_MS = 3000;
export const DEFAULT_GPU_CACHE_MS = 2000;
/** How long past its own timeout a runner may take to settle before the read gives up on it. */
const SETTLE_GRACE_MS = 1000;
const MAX_ERROR_LENGTH = 200;
const TIMED_OUT = Symbol('timed out');
type RunResult = { stdout: string } | { error: unknown };

/**
 * Reads GPU status with nvidia-smi: cached for `cacheMs`, concurrent reads share one run, and at
 * most one nvidia-smi process exists at a time, even one that hangs past its kill (a wedged driver
 * can leave it unkillable), so scrapes never pile up processes.
 */
export class GpuStatusReader implements GpuStatusSource {
  readonly #binary: string;
  readonly #timeoutMs: number;
  readonly #cacheMs: number;
  readonly #visibleDevices: string | undefined;
  readonly #runner: CommandRunner;
  readonly #now: () => number;
  #cached: { status: GpuStatus; at: number } | undefined;
  #pending: Promise<GpuStatus> | undefined;
  #running: Promise<void> | undefined;

  constructor(options: GpuStatusReaderOptions = {}) {
    this.#binary = options.binary ?? 'nvidia-smi';
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_GPU_TIMEOUT_MS;
    this.#cacheMs = options.cacheMs ?? DEFAULT_GPU_CACHE_MS;
    this.#visibleDevices = options.visibleDevices;
    this.#runner = options.runner ?? execFileRunner;
    this.#now = options.now ?? Date.now;
  }

  read(): Promise<GpuStatus> {
    const cached = this.#cached;
    if (cached && this.#now() - cached.at < this.#cacheMs) return Promise.resolve(cached.status);
    this.#pending ??= this.#refresh().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #refresh(): Promise<GpuStatus> {
    const status = await this.#query();
    this.#cached = { status, at: this.#now() };
    return status;
  }

  async #query(): Promise<GpuStatus> {
    if (this.#running) return this.#status([], 'nvidia-smi from an earlier read has not exited yet');
    const settled: Promise<RunResult> = Promise.resolve()
      .then(() => this.#runner(this.#binary, NVIDIA_SMI_ARGS, { timeout: this.#timeoutMs }))
      .then(
        ({ stdout }) => ({ stdout }),
        (error: unknown) => ({ error }),
      );
    const running = settled.then(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;

    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), this.#timeoutMs + SETTLE_GRACE_MS);
      timer.unref();
    });
    const result = await Promise.race([settled, giveUp]);
    clearTimeout(timer);
    if (result === TIMED_OUT) return this.#status([], this.#timeoutMessage());
    this.#running = undefined;
    if ('error' in result) return this.#status([], this.#describe(result.error));
    const gpus = parseNvidiaSmiCsv(result.stdout);
    const noRows = gpus.length === 0 && result.stdout.trim() !== '';
    return this.#status(
      gpus,
      noRows ? `nvidia-smi printed no GPU rows: ${firstLine(result.stdout)}` : undefined,
    );
  }

  #status(all: GpuInfo[], error: string | undefined): GpuStatus {
    const gpus = filterVisibleDevices(all, this.#visibleDevices);
    const available = gpus.length > 0;
    const status: GpuStatus = {
      available,
      device: available ? 'cuda' : 'cpu',
      gpus,
      readAt: new Date(this.#now()).toISOString(),
    };
    if (error !== undefined) status.error = error.slice(0, MAX_ERROR_LENGTH);
    return status;
  }

  #timeoutMessage(): string {
    return `nvidia-smi timed out after ${this.#timeoutMs} ms`;
  }

  /** A short reason for a failed run; undefined for "no nvidia-smi here", which is no error on a CPU host. */
  #describe(error: unknown): string | undefined {
    const { code, killed, signal, stderr, stdout, message } = (error ?? {}) as Record<string, unknown>;
    if (code === 'ENOENT') return undefined;
    if (typeof code === 'string') return `nvidia-smi could not be run (${code})`;
    if (killed === true) return this.#timeoutMessage();
    if (typeof code === 'number') {
      const detail = firstLine(stderr) || firstLine(stdout);
      return `nvidia-smi exited with code ${code}${detail ? `: ${detail}` : ''}`;
    }
    if (typeof signal === 'string') return `nvidia-smi was killed by ${signal}`;
    return `nvidia-smi failed: ${firstLine(message) || 'unknown error'}`;
  }
}

function firstLine(text: unknown): string {
  if (typeof text !== 'string') return '';
  return (
    text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .find((line) => line !== '') ?? ''
  );
}
