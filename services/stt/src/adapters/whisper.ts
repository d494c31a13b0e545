import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  GatewayTimeoutError,
  lastLine,
  ServiceUnavailableError,
  type Logger,
  type OpenContext,
} from '@clinicalsuite/kit';
import type { BackendStatus, Language, Recognition } from '../domain/types.js';
import { pcmSeconds } from '../domain/transcript.js';
import { whisperSegments } from '../domain/whisper-model.js';
import type { SttBackend } from './backend.js';
import { WhisperModelError, inspectWhisperModel, type WhisperModelInfo } from './whisper-model.js';
import {
  WhisperProcess,
  whisperBinding,
  type LoadFailure,
  type Variant,
  type WhisperBinding,
} from './whisper-process.js';

/**
 * Whisper speech recognition with whisper.cpp, through the npm package @fugood/whisper.node
 * (prebuilt N-API binaries: `@fugood/node-whisper-linux-x64` for the CPU,
 * `-cuda` for NVIDIA GPUs), on a ggml model file the user mounts (ggml-base.bin ...).
 *
 * The model runs in child Node processes, never in the service's own: the binding cannot stop a
 * transcription under way (its `stop()` only marks it, and whisper.cpp's abort callback is not
 * wired), and it never settles the promise of a transcription that failed inside whisper.cpp.
 * A child is killed (SIGKILL) when the client goes, the deadline passes or the service stops, and
 * a fresh one loads the model behind it; a crash in native code takes a child, not the service.
 *
 * Before any child loads it, the file is read through (header, vocabulary, every tensor's size):
 * a wrong or truncated file is named in the backend's reason, and the vocabulary says which
 * languages it serves (a *.en model: English only, so Vietnamese is refused, never faked).
 */

export interface WhisperOptions {
  readonly modelPath: string;
  readonly threads: number;
  readonly processes: number;
  readonly gpu: boolean;
  readonly timeoutMs: number;
  /** How often a missing model file is looked for again. */
  readonly pollMs: number;
  readonly logger: Logger;
  readonly onChange?: () => void;
  /** How long one child may take to load the model. */
  readonly loadTimeoutMs?: number;
}

const PACKAGE_VERSION = '1.1.3';
const MAX_FAILURES = 3;
const DEFAULT_LOAD_TIMEOUT_MS = 300_000;
/** Languages routing assumes until the file has been read (so `vi` waits with 503, not 422). */
const UNKNOWN_LANGUAGES: readonly Language[] = ['vi', 'en'];

interface Waiter {
  resolve(p: WhisperProcess): void;
  reject(error: Error): void;
}

export class WhisperBackend implements SttBackend {
  readonly id = 'whisper' as const;
  private state: BackendStatus['state'] = 'starting';
  private reason: string | null;
  private info: WhisperModelInfo | undefined;
  private variant: Variant = 'cpu';
  private binding: WhisperBinding | undefined;
  private gpuNote = '';
  private readonly idle: WhisperProcess[] = [];
  private readonly all = new Set<WhisperProcess>();
  private readonly waiters: Waiter[] = [];
  private failures = 0;
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: WhisperOptions) {
    this.reason = `reading the Whisper model ${options.modelPath}`;
  }

  /** Read through a method: `close()` may have run during an await. */
  private isClosed(): boolean {
    return this.closed;
  }

  /** whisper.cpp processes with the model loaded, waiting for audio. */
  get idleProcesses(): number {
    return this.idle.length;
  }

  status(): BackendStatus {
    const o = this.options;
    const info = this.info;
    return {
      id: 'whisper',
      state: this.state,
      languages: info?.languages ?? UNKNOWN_LANGUAGES,
      reason: this.state === 'ready' ? null : this.reason,
      engine: `whisper.cpp (@fugood/whisper.node ${PACKAGE_VERSION}, ${this.binding?.build ?? this.variant.toUpperCase()}, ${String(o.threads)} threads)${this.binding?.note ?? ''}${this.gpuNote}`,
      model:
        info === undefined
          ? basename(o.modelPath)
          : `${basename(o.modelPath)} (whisper ${info.size}, ${info.languages.includes('vi') ? 'multilingual' : 'English-only'})`,
    };
  }

  /**
   * Waits for the model file, reads it through and loads it into a first process (the kit opens
   * it after the server listens); throws with the reason when the model or whisper.cpp cannot run.
   */
  async open({ signal }: OpenContext): Promise<this> {
    // Closing while it loads kills the process it waits on.
    const stop = (): void => void this.close();
    signal.addEventListener('abort', stop, { once: true });
    try {
      await this.load(signal);
      return this;
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  private async load(signal: AbortSignal): Promise<void> {
    const o = this.options;
    // Wait for the file (a volume still being filled, a model still being fetched).
    while (!existsSync(o.modelPath)) {
      this.reason =
        `waiting for the Whisper model file at ${o.modelPath} (STT_WHISPER_MODEL or MODEL_PATH): mount a whisper.cpp ` +
        'ggml model there (ggml-base.bin, ggml-small.bin, ggml-large-v3-turbo.bin ...)';
      await sleep(o.pollMs, undefined, { signal });
    }
    let info: WhisperModelInfo;
    try {
      info = await inspectWhisperModel(o.modelPath);
      this.info = info;
    } catch (error) {
      throw this.fail(
        error instanceof WhisperModelError ? error.message : `cannot read ${o.modelPath}: ${String(error)}`,
      );
    }
    this.variant = 'cpu';
    this.binding = whisperBinding('cpu');
    if (o.gpu) {
      const cuda = whisperBinding('cuda');
      if (cuda === undefined)
        this.gpuNote = '; STT_WHISPER_GPU is set but @fugood/node-whisper-linux-x64-cuda is not installed';
      else [this.variant, this.binding] = ['cuda', cuda];
    }
    if (this.binding === undefined) {
      throw this.fail(
        `the whisper.cpp binary for ${process.platform}-${process.arch} is not installed ` +
          '(npm install @fugood/whisper.node; its platform package @fugood/node-whisper-<platform>-<arch>)',
      );
    }
    this.reason = `loading the Whisper model ${basename(o.modelPath)} into whisper.cpp`;
    const started = performance.now();
    let first = this.spawn();
    let failure = await this.loadOf(first);
    if (failure !== null && failure.stage === 'binding' && this.variant === 'cuda' && !this.isClosed()) {
      // The CUDA build needs CUDA 12's libraries (libcudart, libcublas): say so, and run on the CPU.
      o.logger.warn(
        { backend: 'whisper', detail: failure.message },
        'the whisper.cpp CUDA build did not load; using the CPU build',
      );
      this.gpuNote =
        '; STT_WHISPER_GPU is set but the CUDA build did not load (CUDA 12 libraries missing?): running on the CPU';
      this.variant = 'cpu';
      this.binding = whisperBinding('cpu');
      if (this.binding !== undefined) {
        first = this.spawn();
        failure = await this.loadOf(first);
      }
    }
    if (failure !== null && failure.stage === 'binding' && this.binding?.local === true && !this.isClosed()) {
      // The addon built on this machine does not load (a library gone since): the prebuilt one.
      o.logger.warn(
        { backend: 'whisper', detail: failure.message },
        'the locally built whisper.cpp addon did not load; using the prebuilt binary',
      );
      this.binding = whisperBinding('cpu', { local: false });
      if (this.binding !== undefined) {
        this.binding = { ...this.binding, note: `; the local build did not load (${failure.message})` };
        first = this.spawn();
        failure = await this.loadOf(first);
      }
    }
    if (this.isClosed()) return;
    if (failure !== null) throw this.fail(this.loadFailure(first, failure));
    this.idle.push(first);
    this.state = 'ready';
    this.reason = null;
    o.logger.info(
      {
        backend: 'whisper',
        model: basename(o.modelPath),
        size: info.size,
        languages: info.languages,
        variant: this.variant,
        loadSeconds: Math.round((performance.now() - started) / 10) / 100,
      },
      'whisper model loaded',
    );
    o.onChange?.();
    this.refill();
  }

  async transcribe(pcm: Buffer, options: { language: Language; signal: AbortSignal }): Promise<Recognition> {
    const { signal, language } = options;
    signal.throwIfAborted();
    if (this.state !== 'ready') {
      throw new ServiceUnavailableError(`Whisper is not ready: ${this.reason ?? this.state}`);
    }
    const deadline = performance.now() + this.options.timeoutMs;
    const timeoutError = (): GatewayTimeoutError =>
      new GatewayTimeoutError(
        `Speech recognition took longer than ${String(this.options.timeoutMs)} ms (STT_RECOGNIZE_TIMEOUT_MS)`,
      );
    const proc = await this.acquire(signal, deadline, timeoutError);
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let done = false;
    try {
      const stop = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeoutError()), Math.max(0, deadline - performance.now()));
        onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        signal.addEventListener('abort', onAbort, { once: true });
      });
      const result = await Promise.race([proc.run(id, pcm, language, this.options.threads), stop]);
      done = true;
      return {
        segments: whisperSegments(result.segments, pcmSeconds(pcm.length)),
        engineLanguage: result.language,
      };
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
      if (done && !proc.exited) this.release(proc);
      else {
        // Stopped mid-way (client gone, deadline, failure): the only way to stop whisper.cpp is to end
        // its process. A fresh one loads the model behind it.
        proc.job = undefined;
        proc.kill();
        this.all.delete(proc);
        this.refill();
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const waits = [...this.all].map(
      (p) => new Promise<void>((resolve) => (p.exited ? resolve() : p.child.once('close', () => resolve()))),
    );
    for (const p of this.all) p.kill();
    this.idle.length = 0;
    for (const w of this.waiters.splice(0)) w.reject(new ServiceUnavailableError('the service is stopping'));
    await Promise.all(waits);
    this.state = 'failed';
    this.reason = 'stopped';
  }

  /** A loaded process for one transcription; waits (abortable, within the deadline) while all are busy. */
  private acquire(signal: AbortSignal, deadline: number, timeoutError: () => Error): Promise<WhisperProcess> {
    const p = this.idle.shift();
    if (p !== undefined) return Promise.resolve(p);
    return new Promise((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        resolve: (proc) => {
          cleanup();
          resolve(proc);
        },
        reject: (error) => {
          cleanup();
          reject(error);
        },
      };
      const onAbort = (): void =>
        waiter.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      const timer = setTimeout(
        () => waiter.reject(timeoutError()),
        Math.max(0, deadline - performance.now()),
      );
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private release(p: WhisperProcess): void {
    const w = this.waiters.shift();
    if (w !== undefined) w.resolve(p);
    else this.idle.push(p);
  }

  /** Starts processes until `processes` are loaded or loading. */
  private refill(): void {
    if (this.closed || this.state !== 'ready') return;
    while (this.all.size < this.options.processes) {
      const p = this.spawn();
      void this.loadOf(p).then((failure) => {
        if (this.closed) return;
        if (failure === null) {
          this.failures = 0;
          this.release(p);
          return;
        }
        this.all.delete(p);
        this.failures += 1;
        this.options.logger.warn(
          { backend: 'whisper', stage: failure.stage, detail: lastLine(p.stderrTail) },
          'a whisper.cpp process failed to load the model',
        );
        if (this.failures >= MAX_FAILURES) {
          const reason = this.fail(this.loadFailure(p, failure)).message;
          this.options.logger.error({ backend: 'whisper', reason }, 'whisper is not available');
          return;
        }
        const t = setTimeout(() => this.refill(), 500 * this.failures);
        t.unref();
      });
    }
  }

  private spawn(): WhisperProcess {
    const p = new WhisperProcess(this.binding?.path ?? '', this.options.modelPath, this.variant === 'cuda');
    this.all.add(p);
    p.child.once('close', () => {
      this.all.delete(p);
      const i = this.idle.indexOf(p);
      if (i >= 0) {
        // A loaded process died waiting (killed from outside, out of memory): replace it.
        this.idle.splice(i, 1);
        this.refill();
      }
    });
    return p;
  }

  private async loadOf(p: WhisperProcess): Promise<LoadFailure | null> {
    let timer: NodeJS.Timeout | undefined;
    const limit = this.options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
    const result = await Promise.race([
      p.loaded,
      new Promise<LoadFailure>((resolve) => {
        timer = setTimeout(() => {
          p.kill();
          resolve({ stage: 'timeout', message: `did not load the model within ${String(limit)} ms` });
        }, limit);
      }),
    ]);
    clearTimeout(timer);
    return result;
  }

  private loadFailure(p: WhisperProcess, failure: LoadFailure): string {
    this.options.logger.error(
      { backend: 'whisper', stage: failure.stage, message: failure.message, detail: lastLine(p.stderrTail) },
      'whisper.cpp could not load the model',
    );
    if (failure.stage === 'binding') {
      return `the whisper.cpp binary (${this.variant}) does not load on this machine; the service log has the reason`;
    }
    return (
      `whisper.cpp could not load the Whisper model ${this.options.modelPath} (${failure.message}); ` +
      'the service log has whisper.cpp\u2019s last message: supply an intact ggml-*.bin model'
    );
  }

  /** Failed for good: the error to throw or log, with the reason. */
  private fail(reason: string): Error {
    this.state = 'failed';
    this.reason = reason;
    for (const p of this.all) p.kill();
    this.idle.length = 0;
    for (const w of this.waiters.splice(0))
      w.reject(new ServiceUnavailableError(`Whisper is not available: ${reason}`));
    this.options.onChange?.();
    return new Error(reason);
  }
}
