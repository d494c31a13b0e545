import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  childLimitFailure,
  GatewayTimeoutError,
  lastLine,
  limitedCommand,
  MemoryWatch,
  PayloadTooLargeError,
  ProcessError,
  runProcess,
  ServiceUnavailableError,
  ValidationError,
  type ChildLimits,
} from '@clinicalsuite/kit';
import type { RgbImage } from '../domain/align.js';

/**
 * Video through ffmpeg: ffprobe checks the container and reads duration, frame size, frame count
 * and rotation from the headers (the route refuses what is over the limits before anything is
 * decoded); ffmpeg decodes at the requested frame rate, scaled to at most `maxWidth`, no further
 * than `maxSeconds` into the video whatever its header said, to raw RGB on a pipe that is read
 * frame by frame (never the whole video in memory), so it streams instead of running through the
 * kit's ProcessRunner (which collects stdout). Both run under the service's memory and CPU limits
 * (the kit's `limitedCommand`); abort kills both.
 */

export interface VideoInfo {
  readonly format: string;
  readonly durationSeconds: number;
  /** Upright (after the rotation ffmpeg applies). */
  readonly width: number;
  readonly height: number;
  /**
   * Frames in the video stream as its header says (`nb_frames`), else its duration times its
   * frame rate; null when the header says neither.
   */
  readonly frames: number | null;
}

const ACCEPTED = ['mov', 'mp4', 'm4a', '3gp', '3g2', 'mj2', 'avi'];

export interface ProbeOptions {
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly limits: ChildLimits;
}

export async function probeVideo(
  ffprobe: string,
  path: string,
  name: string,
  options: ProbeOptions,
): Promise<VideoInfo> {
  let stdout: string;
  try {
    const args = ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams'];
    args.push('-select_streams', 'v:0', path);
    stdout = (
      await runProcess(ffprobe, args, {
        timeoutMs: options.timeoutMs,
        signal: options.signal,
        maxOutputBytes: 1 << 20,
        limits: options.limits,
      })
    ).toString('utf8');
  } catch (error) {
    if (!(error instanceof ProcessError)) throw error;
    switch (error.kind) {
      case 'not_found':
        throw videoUnavailable(ffprobe);
      case 'aborted':
        throw (error.cause as Error | undefined) ?? error; // the request's own reason (deadline, client gone)
      case 'timeout':
        throw new GatewayTimeoutError(`${name} could not be read in ${String(options.timeoutMs)} ms`);
      case 'memory_limit':
      case 'cpu_limit':
        throw limitError(error, name, options.limits);
      case 'exit':
      case 'output_too_large':
        throw new BadRequestError(`${name} is not a readable video: ${lastLine(error.stderr)}`, {
          code: 'invalid_video',
        });
    }
  }
  const parsed = JSON.parse(stdout) as {
    format?: { format_name?: string; duration?: string };
    streams?: {
      width?: number;
      height?: number;
      nb_frames?: string;
      avg_frame_rate?: string;
      r_frame_rate?: string;
      duration?: string;
      side_data_list?: { rotation?: number }[];
      tags?: { rotate?: string };
    }[];
  };
  const formats = (parsed.format?.format_name ?? '').split(',');
  const stream = parsed.streams?.[0];
  if (
    !formats.some((f) => ACCEPTED.includes(f)) ||
    stream?.width === undefined ||
    stream.height === undefined
  ) {
    throw new BadRequestError(`${name} is not an MP4, AVI or MOV video`, { code: 'unsupported_video_type' });
  }
  const rotation = Math.abs(
    stream.side_data_list?.find((s) => s.rotation !== undefined)?.rotation ??
      Number(stream.tags?.rotate ?? 0),
  );
  const sideways = rotation % 180 === 90;
  const durationSeconds = Number(parsed.format?.duration ?? 0);
  return {
    format: formats.includes('avi') ? 'avi' : 'mp4/mov',
    durationSeconds,
    width: sideways ? stream.height : stream.width,
    height: sideways ? stream.width : stream.height,
    frames: declaredFrames(stream, durationSeconds),
  };
}

/** `nb_frames`, else the stream's (or the container's) duration times its frame rate. */
function declaredFrames(
  stream: { nb_frames?: string; avg_frame_rate?: string; r_frame_rate?: string; duration?: string },
  containerSeconds: number,
): number | null {
  const counted = Number(stream.nb_frames);
  if (Number.isFinite(counted) && counted > 0) return counted;
  const rate = ratio(stream.avg_frame_rate) ?? ratio(stream.r_frame_rate);
  const seconds = Number(stream.duration ?? containerSeconds);
  return rate !== null && Number.isFinite(seconds) && seconds > 0 ? Math.ceil(rate * seconds) : null;
}

/** ffprobe's `30000/1001` as a number; null for `0/0` or anything else. */
function ratio(text: string | undefined): number | null {
  const [num, den] = (text ?? '').split('/').map(Number);
  return num !== undefined && den !== undefined && num > 0 && den > 0 ? num / den : null;
}

export interface FrameOptions {
  readonly fps: number;
  readonly maxWidth: number;
  readonly maxFrames: number;
  /** Decoding stops this far into the video, whatever its header said its duration was. */
  readonly maxSeconds: number;
  readonly signal: AbortSignal;
  readonly limits: ChildLimits;
}

/** Decoded frames, in order, at `fps`. */
export async function* videoFrames(
  ffmpeg: string,
  path: string,
  info: VideoInfo,
  options: FrameOptions,
): AsyncGenerator<RgbImage> {
  const width = even(Math.min(options.maxWidth, info.width));
  const height = even((info.height * width) / info.width);
  const command = limitedCommand(
    ffmpeg,
    [
      '-v',
      'error',
      '-nostdin',
      // A fixed number of threads: the memory ffmpeg needs (and its limit) does not grow with the
      // machine's cores; the face models, not decoding, are what takes the time.
      '-threads',
      '2',
      '-filter_threads',
      '1',
      '-t',
      String(options.maxSeconds),
      '-i',
      path,
      '-vf',
      `fps=${String(options.fps)},scale=${String(width)}:${String(height)}`,
      '-frames:v',
      String(options.maxFrames),
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      'pipe:1',
    ],
    options.limits,
  );
  const started = performance.now();
  const child = spawn(command.command, command.args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const memory = new MemoryWatch();
  child.stderr.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    memory.add(text);
    stderr = (stderr + text).slice(-4000);
  });
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  let killed = false;
  const kill = (): void => {
    killed = true;
    child.kill('SIGKILL');
  };
  options.signal.addEventListener('abort', kill, { once: true });
  const frameBytes = width * height * 3;
  let pending: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= frameBytes) {
        const frame = new Uint8Array(pending.subarray(0, frameBytes));
        pending = pending.subarray(frameBytes);
        yield { width, height, data: frame };
      }
    }
    const end = await Promise.race([exited, spawnError]);
    if (end instanceof Error) throw videoUnavailable(ffmpeg);
    if (options.signal.aborted) return;
    const failure = childLimitFailure(ffmpeg, options.limits, {
      ...end,
      killed,
      memoryExhausted: memory.exhausted,
      stderr,
      seconds: (performance.now() - started) / 1000,
    });
    if (failure?.kind === 'not_found') throw videoUnavailable(failure.command);
    if (failure !== undefined) throw limitError(failure, 'the video', options.limits);
    if (end.code !== 0) {
      throw new BadRequestError(`the video could not be decoded: ${lastLine(stderr)}`, {
        code: 'invalid_video',
      });
    }
  } finally {
    options.signal.removeEventListener('abort', kill);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/** A video that made ffprobe or ffmpeg use up its memory (413) or CPU time (422). */
function limitError(error: ProcessError, name: string, limits: ChildLimits): Error {
  if (error.kind === 'memory_limit') {
    return new PayloadTooLargeError(
      `${name} needs more memory to decode than one video process may use ` +
        `(${String(Math.round(limits.memoryBytes / 1024 ** 2))} MiB, CHILD_MEMORY_LIMIT)`,
      { cause: error },
    );
  }
  return new ValidationError(
    [
      {
        loc: ['body', 'file'],
        msg:
          `decoding took more than ${String(limits.cpuSeconds)} s of CPU time (CHILD_CPU_SECONDS) and was ` +
          'stopped: send a shorter or smaller video',
        type: 'too_complex',
      },
    ],
    { cause: error },
  );
}

function videoUnavailable(binary: string): ServiceUnavailableError {
  return new ServiceUnavailableError(
    `Video processing is not available: the video library (ffmpeg) is not installed (${binary} not found). ` +
      'Install ffmpeg in the image or set FFMPEG_PATH / FFPROBE_PATH.',
  );
}

function even(n: number): number {
  return Math.max(2, 2 * Math.round(n / 2));
}
