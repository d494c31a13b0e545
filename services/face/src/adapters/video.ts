import { spawn } from 'node:child_process';
import {
  BadRequestError,
  GatewayTimeoutError,
  lastLine,
  ProcessError,
  runProcess,
  ServiceUnavailableError,
} from '@clinicalsuite/kit';
import type { RgbImage } from '../domain/align.js';

/**
 * Video through ffmpeg: ffprobe checks the container and reads duration, size and rotation;
 * ffmpeg decodes at the requested frame rate, scaled to at most `maxWidth`, to raw RGB on a pipe
 * that is read frame by frame (never the whole video in memory), so it streams instead of running
 * through the kit's ProcessRunner (which collects stdout). Abort kills both.
 */

export interface VideoInfo {
  readonly format: string;
  readonly durationSeconds: number;
  /** Upright (after the rotation ffmpeg applies). */
  readonly width: number;
  readonly height: number;
}

const ACCEPTED = ['mov', 'mp4', 'm4a', '3gp', '3g2', 'mj2', 'avi'];

export interface ProbeOptions {
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
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
      case 'exit':
      case 'output_too_large':
      case 'memory_limit':
      case 'cpu_limit':
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
  return {
    format: formats.includes('avi') ? 'avi' : 'mp4/mov',
    durationSeconds: Number(parsed.format?.duration ?? 0),
    width: sideways ? stream.height : stream.width,
    height: sideways ? stream.width : stream.height,
  };
}

export interface FrameOptions {
  readonly fps: number;
  readonly maxWidth: number;
  readonly maxFrames: number;
  readonly signal: AbortSignal;
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
  const child = spawn(
    ffmpeg,
    [
      '-v',
      'error',
      '-nostdin',
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
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const kill = (): void => {
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
    const code = await Promise.race([exited, spawnError]);
    if (code instanceof Error) throw videoUnavailable(ffmpeg);
    if (code !== 0 && !options.signal.aborted) {
      throw new BadRequestError(`the video could not be decoded: ${lastLine(stderr)}`, {
        code: 'invalid_video',
      });
    }
  } finally {
    options.signal.removeEventListener('abort', kill);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
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
