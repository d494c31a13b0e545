/**
 * libuv's thread pool in the text LLM's process. node-llama-cpp runs each decode and each sampling
 * step as a job on it, and its best size depends on where decoding runs (the measurements are in
 * services/llm/README.md, "Speed"):
 * - on the CPU, 1. With more, those jobs hop between threads and cores: one stream decodes slower,
 *   and concurrent streams gain nothing.
 * - on a GPU, one per slot plus one. A decode holds its thread while the GPU works, and the
 *   engine's loop (lockstep.ts) samples a step's sequences side by side once its decode is back,
 *   so a step uses one thread per slot. With fewer, concurrent streams wait for each other's
 *   samples; one thread suits a lone stream better, but the slots are what the service is for.
 *
 * libuv reads UV_THREADPOOL_SIZE once, when the pool starts, and Node's ES module loader starts it
 * before an ES module's first line runs. So the service's entry (boot.cts, CommonJS) applies this
 * choice before it loads anything else. This module imports nothing but `node:fs`: the entry
 * `require`s it, which must stay synchronous.
 */
import { existsSync, readdirSync } from 'node:fs';

type Env = Readonly<Record<string, string | undefined>>;

/** The llm's default MAX_CONCURRENCY (config.ts; the spec's 3 in work). */
export const DEFAULT_SLOTS = 3;

/** What the host offers, as far as it can be told before any GPU library is loaded. */
export interface HostDevices {
  readonly platform: NodeJS.Platform;
  /** An NVIDIA driver's control device (/dev/nvidiactl): CUDA can run. */
  readonly nvidia: boolean;
  /** A DRM render node (/dev/dri/renderD*): Vulkan may run. */
  readonly renderNode: boolean;
}

export function hostDevices(): HostDevices {
  let renderNode = false;
  try {
    renderNode = readdirSync('/dev/dri').some((name) => name.startsWith('renderD'));
  } catch {
    // No /dev/dri: no render node.
  }
  return { platform: process.platform, nvidia: existsSync('/dev/nvidiactl'), renderNode };
}

export interface ThreadPoolChoice {
  /** The pool size libuv will use. */
  readonly size: number;
  /** UV_THREADPOOL_SIZE was given (and is kept); otherwise the size is this module's choice. */
  readonly given: boolean;
}

/** The pool size that suits decoding on a GPU or on the CPU with `slots` sequences. */
export function recommendedPoolSize(gpu: boolean, slots: number): number {
  return gpu ? Math.min(1024, Math.max(2, slots + 1)) : 1;
}

/**
 * Whether the service will decode on a GPU, judged from its GPU and GPU_LAYERS variables and the
 * host's devices before node-llama-cpp loads: `auto` finds CUDA where an NVIDIA driver is, Vulkan
 * where a render node is, and Metal on macOS. After the model loads, the service checks this guess
 * against the backend it got (app.ts).
 */
export function expectsGpu(env: Env, devices: HostDevices): boolean {
  const gpu = env['GPU']?.trim() || 'auto';
  if (gpu === 'false' || env['GPU_LAYERS']?.trim() === '0') return false;
  if (gpu !== 'auto') return true;
  return devices.platform === 'darwin' || devices.nvidia || devices.renderNode;
}

/** The pool for this process: UV_THREADPOOL_SIZE when given, else the size its decoding suits. */
export function threadPoolChoice(env: Env, devices: HostDevices = hostDevices()): ThreadPoolChoice {
  const given = env['UV_THREADPOOL_SIZE'];
  if (given !== undefined) return { size: uvThreadpoolSizeOf(given), given: true };
  const slots = Number.parseInt(env['MAX_CONCURRENCY'] ?? '', 10);
  return {
    size: recommendedPoolSize(
      expectsGpu(env, devices),
      Number.isInteger(slots) && slots > 0 ? slots : DEFAULT_SLOTS,
    ),
    given: false,
  };
}

/**
 * libuv's own reading of UV_THREADPOOL_SIZE (`atoi` into an unsigned int): 4 when unset, 1 for 0 or
 * no number, at most 1024 (a negative number wraps round to the maximum).
 */
export function uvThreadpoolSizeOf(value: string | undefined): number {
  if (value === undefined) return 4;
  const n = Number.parseInt(value.trim(), 10);
  if (Number.isNaN(n) || n === 0) return 1;
  return n < 0 ? 1024 : Math.min(1024, n);
}
