import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import {
  GatewayTimeoutError,
  lastLine,
  limitedCommand,
  ProcessError,
  ProcessRunner,
  type ChildLimits,
  type Logger,
  type OpenContext,
} from '@clinicalsuite/kit';
import { parsePocketsphinxOutput } from '../domain/pocketsphinx-output.js';
import { limitError } from './audio.js';
import type { BackendStatus, Language, Recognition } from '../domain/types.js';
import { EngineError, type SttBackend } from './backend.js';

/**
 * English speech recognition with CMU pocketsphinx, as Debian packages it (`pocketsphinx`:
 * `pocketsphinx_continuous`; `pocketsphinx-en-us`: the US English acoustic model, language model
 * and dictionary). Loading the model costs every process a fixed start-up, so processes are
 * started ahead: each loads the model and waits on its stdin (`-infile /dev/stdin`, a real pipe
 * fed by `cat`, since Node's stdio is a socket that /dev/stdin cannot open); a request
 * takes one, writes its PCM and closes stdin, reads the timed words from stdout, and a fresh
 * process is started behind it for the next request. With `warm: 0` every request starts its own
 * process (the cold path the benchmark compares with). Each process (and the shell and `cat` around
 * it) runs under the service's memory and CPU limits, which cover its model load and one request.
 */

export interface PocketsphinxOptions {
  readonly binary: string;
  readonly hmm: string;
  readonly lm: string;
  readonly dict: string;
  /** Processes kept loaded and waiting. */
  readonly warm: number;
  readonly timeoutMs: number;
  /** Each process's memory and CPU time: its model load (under a second of CPU) and one request. */
  readonly limits: ChildLimits;
  readonly logger: Logger;
  /** A request got a process that was already loaded (`warm`) or had to start one (`cold`). */
  readonly onProcess?: (kind: 'warm' | 'cold') => void;
  readonly modelName?: string;
  /** Called when the backend's state changes (ready, failed). */
  readonly onChange?: () => void;
}

/** What `pocketsphinx_continuous` prints on stderr once the model is loaded, before it reads audio. */
const LOADED_MARKER = /pocketsphinx_continuous COMPILED ON/;
const MAX_FAILURES = 3;
/** Longest model load before the process counts as failed. */
const LOAD_TIMEOUT_MS = 120_000;
const WRAPPER = 'cat | { "$0" "$@"; code=$?; [ "$code" -eq 0 ] || kill -9 0; exit "$code"; }';
const LANGUAGES: readonly Language[] = ['en'];

class SphinxProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** true once the model is loaded; false when the process ended first. */
  readonly loaded: Promise<boolean>;
  readonly startedAt = performance.now();
  stderrTail = '';
  exited = false;
  exitCode: number | null = null;
  spawnError: NodeJS.ErrnoException | undefined;

  constructor(binary: string, args: readonly string[], limits: ChildLimits) {
    // Its own process group, so one kill stops sh, cat and pocketsphinx together.
    // When pocketsphinx fails, cat would wait on stdin forever: the group goes with it.
    const command = limitedCommand('/bin/sh', ['-c', WRAPPER, binary, ...args], limits);
    this.child = spawn(command.command, command.args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child.stdin.on('error', () => undefined); // EPIPE when it died
    let markLoaded: (loaded: boolean) => void = () => undefined;
    this.loaded = new Promise((resolve) => (markLoaded = resolve));
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4000);
      if (LOADED_MARKER.test(this.stderrTail)) markLoaded(true);
    });
    this.child.once('error', (error: NodeJS.ErrnoException) => {
      this.spawnError = error;
      this.exited = true;
      markLoaded(false);
    });
    this.child.once('exit', (code) => {
      this.exited = true;
      this.exitCode = code;
      markLoaded(false);
    });
  }

  get notInstalled(): boolean {
    return this.spawnError?.code === 'ENOENT';
  }

  kill(): void {
    if (this.exited || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      this.child.kill('SIGKILL');
    }
  }
}

export class PocketsphinxBackend implements SttBackend {
  readonly id = 'pocketsphinx' as const;
  private readonly idle: SphinxProcess[] = [];
  private readonly all = new Set<SphinxProcess>();
  private state: BackendStatus['state'] = 'starting';
  private reason: string | null = 'starting pocketsphinx and loading its English model';
  private failures = 0;
  private closed = false;
  private respawnTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PocketsphinxOptions) {}

  get args(): string[] {
    const o = this.options;
    return ['-infile', '/dev/stdin', '-time', 'yes', '-hmm', o.hmm, '-lm', o.lm, '-dict', o.dict];
  }

  /** Processes loaded (or loading) and waiting for audio. */
  get warmProcesses(): number {
    return this.idle.length;
  }

  status(): BackendStatus {
    return {
      id: 'pocketsphinx',
      state: this.state,
      languages: LANGUAGES,
      reason: this.state === 'ready' ? null : this.reason,
      engine: 'pocketsphinx (CMU Sphinx pocketsphinx_continuous)',
      model: this.options.modelName ?? 'en-us',
    };
  }

  /**
   * Checks the model files and the command, and starts the first process (the kit opens it after
   * the server listens); throws with the reason when pocketsphinx cannot run.
   */
  async open({ signal }: OpenContext): Promise<this> {
    // Closing while it loads kills the process it waits on.
    const stop = (): void => void this.close();
    signal.addEventListener('abort', stop, { once: true });
    try {
      await this.load();
      return this;
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  private async load(): Promise<void> {
    const o = this.options;
    for (const [what, path] of [
      ['acoustic model directory', o.hmm],
      ['language model', o.lm],
      ['dictionary', o.dict],
    ] as const) {
      try {
        await access(path);
      } catch {
        throw this.fail(
          `the pocketsphinx ${what} is missing at ${path}: install Debian's pocketsphinx-en-us ` +
            '(apt-get install pocketsphinx pocketsphinx-en-us) or set POCKETSPHINX_HMM, POCKETSPHINX_LM and POCKETSPHINX_DICT',
        );
      }
    }
    if (!(await commandExists(o.binary))) {
      throw this.fail(
        `${o.binary} is not installed: apt-get install pocketsphinx pocketsphinx-en-us, or set POCKETSPHINX_PATH`,
      );
    }
    // One process proves the command and the model load; with no warm processes it reads no audio.
    const first = this.spawn();
    if (o.warm === 0) first.child.stdin.end();
    else this.idle.push(first);
    let timer: NodeJS.Timeout | undefined;
    const loaded = await Promise.race([
      first.loaded,
      new Promise<false>((resolve) => {
        timer = setTimeout(() => {
          first.kill();
          resolve(false);
        }, LOAD_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (this.closed) return;
    if (!loaded) throw this.fail(this.deathReason(first));
    this.state = 'ready';
    this.reason = null;
    o.onChange?.();
    o.logger.info(
      {
        backend: 'pocketsphinx',
        warm: o.warm,
        loadSeconds: round2((performance.now() - first.startedAt) / 1000),
      },
      'pocketsphinx model loaded',
    );
    this.refill();
  }

  async transcribe(pcm: Buffer, options: { language: Language; signal: AbortSignal }): Promise<Recognition> {
    options.signal.throwIfAborted();
    let proc = this.take();
    this.options.onProcess?.(proc === undefined ? 'cold' : 'warm');
    proc ??= this.spawn();
    this.refill();
    try {
      // Its own process group (see SphinxProcess): the deadline and an abort kill sh, cat and it.
      const limits = this.options.limits;
      const result = await new ProcessRunner({ limits })
        .supervise(proc.child, 'pocketsphinx', {
          input: pcm,
          timeoutMs: this.options.timeoutMs,
          signal: options.signal,
          maxOutputBytes: 16 * 1024 * 1024,
          processGroup: true,
        })
        .catch((error: unknown) => {
          options.signal.throwIfAborted();
          if (error instanceof ProcessError && error.kind === 'timeout') {
            throw new GatewayTimeoutError(
              `Speech recognition took longer than ${String(this.options.timeoutMs)} ms (STT_RECOGNIZE_TIMEOUT_MS)`,
            );
          }
          const limit =
            error instanceof ProcessError ? limitError(error, 'Speech recognition', limits) : undefined;
          throw limit ?? error;
        });
      if (result.code !== 0) {
        throw new EngineError(
          `pocketsphinx failed (${result.signal ?? `exit code ${String(result.code)}`})`,
          lastLine(result.stderr),
        );
      }
      return { segments: parsePocketsphinxOutput(result.stdout.toString()) };
    } finally {
      proc.kill();
      this.all.delete(proc);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.respawnTimer !== undefined) clearTimeout(this.respawnTimer);
    const waits = [...this.all].map(
      (p) => new Promise<void>((resolve) => (p.exited ? resolve() : p.child.once('close', () => resolve()))),
    );
    for (const p of this.all) p.kill();
    this.idle.length = 0;
    await Promise.all(waits);
    this.state = 'failed';
    this.reason = 'stopped';
  }

  private take(): SphinxProcess | undefined {
    while (this.idle.length > 0) {
      const p = this.idle.shift();
      if (p !== undefined && !p.exited) return p;
    }
    return undefined;
  }

  /** Starts processes until `warm` wait loaded. */
  private refill(): void {
    if (this.closed || this.state !== 'ready') return;
    while (this.idle.length < this.options.warm) {
      const p = this.spawn();
      this.idle.push(p);
      void p.loaded.then((loaded) => {
        if (loaded || this.closed) {
          if (loaded) this.failures = 0;
          return;
        }
        // It died waiting (killed from outside, out of memory): replace it, but not forever.
        const i = this.idle.indexOf(p);
        if (i >= 0) this.idle.splice(i, 1);
        this.failures += 1;
        this.options.logger.warn(
          { backend: 'pocketsphinx', code: p.exitCode, detail: lastLine(p.stderrTail) },
          'a waiting pocketsphinx process exited',
        );
        if (this.failures >= MAX_FAILURES) {
          const failure = this.fail(this.deathReason(p));
          this.options.logger.error(
            { backend: 'pocketsphinx', reason: failure.message },
            'pocketsphinx is not available',
          );
          return;
        }
        this.respawnTimer = setTimeout(() => this.refill(), 500 * this.failures);
        this.respawnTimer.unref();
      });
    }
  }

  private spawn(): SphinxProcess {
    const p = new SphinxProcess(this.options.binary, this.args, this.options.limits);
    this.all.add(p);
    p.child.once('close', () => this.all.delete(p));
    return p;
  }

  private deathReason(p: SphinxProcess): string {
    if (p.notInstalled) {
      return `${this.options.binary} is not installed: apt-get install pocketsphinx pocketsphinx-en-us, or set POCKETSPHINX_PATH`;
    }
    this.options.logger.error(
      { backend: 'pocketsphinx', code: p.exitCode, detail: lastLine(p.stderrTail) },
      'pocketsphinx exited while loading its model',
    );
    return `pocketsphinx exited (code ${String(p.exitCode)}) while loading its model; the service log has its last message`;
  }

  /** Failed for good: the error to throw or log, with the reason. */
  private fail(reason: string): Error {
    this.state = 'failed';
    this.reason = reason;
    for (const p of this.idle) p.kill();
    this.idle.length = 0;
    this.options.onChange?.();
    return new Error(reason);
  }
}

/** Whether `command` (a path, or a name looked up in PATH) is an executable file. */
export async function commandExists(command: string): Promise<boolean> {
  const candidates = command.includes('/')
    ? [command]
    : (process.env['PATH'] ?? '/usr/bin:/bin').split(delimiter).map((d) => join(d, command));
  for (const path of candidates) {
    try {
      await access(path, constants.X_OK);
      return true;
    } catch {
      // next
    }
  }
  return false;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
