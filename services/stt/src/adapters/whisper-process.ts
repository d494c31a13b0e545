/** One whisper.cpp child process: loads the model once, then transcribes one clip at a time. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { lastLine } from '@clinicalsuite/kit';
import { z } from 'zod';
import type { Language } from '../domain/types.js';
import { EngineError } from './backend.js';
import { CHILD_SOURCE, type ChildMessage } from './whisper-child.js';

/** Why a child could not load the model: the stage it reached and what it said. */
export interface LoadFailure {
  readonly stage: string;
  readonly message: string;
}

export type WhisperResult = Extract<ChildMessage, { type: 'result' }>;

export type Variant = 'cpu' | 'cuda';

/** The whisper.cpp addon a child loads, and how it was built (for /info's engine). */
export interface WhisperBinding {
  readonly path: string;
  /** `CPU zen4 build`, `CPU, prebuilt without SIMD`, `CUDA`. */
  readonly build: string;
  /** Why the local build was passed over, when one exists ('' otherwise). */
  readonly note: string;
  /** Built on this machine by services/stt/scripts/build-whisper-node.sh. */
  readonly local: boolean;
}

/** What services/stt/scripts/build-whisper-node.sh writes beside the addon it builds. */
const localBuildSchema = z.object({ variant: z.string(), cpuFlags: z.array(z.string()) });

/** This CPU's feature flags (/proc/cpuinfo), empty where it cannot be read. */
export function cpuFlags(): ReadonlySet<string> {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('flags'));
    return new Set((line?.split(':')[1] ?? '').trim().split(/\s+/));
  } catch {
    return new Set();
  }
}

/**
 * The addon for a variant, or undefined when none is installed. On the CPU, the addon built for
 * this machine (build/Release/index.node in @fugood/whisper.node, made by
 * services/stt/scripts/build-whisper-node.sh: SIMD kernels; README, "Speed") when this CPU has every
 * flag it was built for, else the platform package's prebuilt binary (compiled without AVX).
 */
export function whisperBinding(
  variant: Variant,
  { flags = cpuFlags(), local = true }: { flags?: ReadonlySet<string>; local?: boolean } = {},
): WhisperBinding | undefined {
  const require = createRequire(import.meta.url);
  let note = '';
  if (variant === 'cpu' && local) {
    try {
      const dir = join(dirname(require.resolve('@fugood/whisper.node/package.json')), 'build', 'Release');
      const built = localBuildSchema.parse(JSON.parse(readFileSync(join(dir, 'build.json'), 'utf8')));
      const missing = built.cpuFlags.filter((f) => !flags.has(f));
      if (missing.length === 0 && existsSync(join(dir, 'index.node'))) {
        return { path: join(dir, 'index.node'), build: `CPU ${built.variant} build`, note, local: true };
      }
      if (missing.length > 0) {
        note = `; the local ${built.variant} build needs CPU features this machine lacks (${missing.join(', ')}): running the slower prebuilt binary`;
      }
    } catch {
      // No local build (or an unreadable build.json): the prebuilt binary.
    }
  }
  const name = `@fugood/node-whisper-${process.platform}-${process.arch}${variant === 'cuda' ? '-cuda' : ''}`;
  try {
    const path = join(dirname(require.resolve(`${name}/package.json`)), 'index.node');
    if (!existsSync(path)) return undefined;
    return { path, build: variant === 'cuda' ? 'CUDA' : 'CPU, prebuilt without SIMD', note, local: false };
  } catch {
    return undefined;
  }
}

interface Job {
  readonly id: number;
  resolve(value: WhisperResult): void;
  reject(error: Error): void;
}

export class WhisperProcess {
  readonly child: ChildProcess;
  /** Settles once the model is loaded (null) or the child failed first (the failure). */
  readonly loaded: Promise<LoadFailure | null>;
  stderrTail = '';
  exited = false;
  exitCode: number | null = null;
  exitSignal: NodeJS.Signals | null = null;
  job: Job | undefined;

  constructor(binding: string, modelPath: string, gpu: boolean) {
    this.child = spawn(process.execPath, ['-e', CHILD_SOURCE], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        ...(process.env['LD_LIBRARY_PATH'] === undefined
          ? {}
          : { LD_LIBRARY_PATH: process.env['LD_LIBRARY_PATH'] }),
        ...(process.env['CUDA_VISIBLE_DEVICES'] === undefined
          ? {}
          : { CUDA_VISIBLE_DEVICES: process.env['CUDA_VISIBLE_DEVICES'] }),
        STT_WHISPER_BINDING: binding,
        STT_WHISPER_MODEL_FILE: modelPath,
        STT_WHISPER_USE_GPU: gpu ? '1' : '0',
      },
    });
    // whisper.cpp's own log (model sizes, progress): kept for a failure's log line, never sent out.
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4000);
    });
    let settle: (v: LoadFailure | null) => void = () => undefined;
    this.loaded = new Promise((resolve) => (settle = resolve));
    this.child.on('message', (m: ChildMessage) => {
      if (m.type === 'ready') settle(null);
      else if (m.type === 'load_failed') settle({ stage: m.stage, message: m.message });
      else if (this.job?.id === m.id) {
        const job = this.job;
        this.job = undefined;
        if (m.type === 'result') job.resolve(m);
        else job.reject(new EngineError('whisper.cpp failed on this audio', m.message));
      }
    });
    this.child.once('error', (error) => {
      this.exited = true;
      settle({ stage: 'spawn', message: error.message });
    });
    this.child.once('exit', (code, signal) => {
      this.exited = true;
      this.exitCode = code;
      this.exitSignal = signal;
      settle({ stage: 'exit', message: `exited (${signal ?? `code ${String(code)}`}) while loading` });
      const job = this.job;
      this.job = undefined;
      job?.reject(
        new EngineError(
          `whisper.cpp exited (${signal ?? `code ${String(code)}`}) during the transcription`,
          lastLine(this.stderrTail),
        ),
      );
    });
  }

  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL');
  }

  run(id: number, pcm: Buffer, language: Language, threads: number): Promise<WhisperResult> {
    return new Promise((resolve, reject) => {
      this.job = { id, resolve, reject };
      this.child.send({ type: 'transcribe', id, language, threads, pcm: new Uint8Array(pcm) }, (error) => {
        if (error !== null && this.job?.id === id) {
          this.job = undefined;
          reject(new EngineError('could not hand the audio to whisper.cpp', error.message));
        }
      });
    });
  }
}
