import {
  BadRequestError,
  GatewayTimeoutError,
  PayloadTooLargeError,
  ProcessError,
  ProcessRunner,
  ServiceUnavailableError,
  UnsupportedMediaTypeError,
  ValidationError,
  type ChildLimits,
  type RunOptions,
  type RunResult,
} from '@clinicalsuite/kit';
import { pcmSeconds } from '../domain/transcript.js';

/**
 * Audio through ffmpeg, from memory (the upload is never written to disk): ffprobe checks that the
 * file is a container this service takes and holds an audio stream; ffmpeg decodes it to what
 * every engine here reads, 16 kHz mono signed 16-bit little-endian PCM, cut one second past the
 * duration limit so a long file costs no more than that to find out, whatever its header says.
 * Both run under the service's memory and CPU limits (the kit's ProcessRunner).
 */

export const SAMPLE_RATE = 16_000;

/** ffprobe's format names this service takes, and what users call them. */
export const ACCEPTED_FORMATS: Readonly<Record<string, string>> = {
  wav: 'WAV',
  mp3: 'MP3',
  ogg: 'OGG (Vorbis, Opus)',
  flac: 'FLAC',
  webm: 'WebM (Opus)',
};
const ACCEPTED_LIST = Object.values(ACCEPTED_FORMATS).join(', ');

export interface AudioInfo {
  /** ffprobe's format name (`wav`, `mp3`, `ogg` ...). */
  readonly format: string;
  readonly codec: string;
  readonly sampleRate: number;
  readonly channels: number;
  /** What the container says, when it says (often absent for streams read from a pipe). */
  readonly declaredSeconds: number | null;
}

export interface AudioTools {
  readonly ffmpeg: string;
  readonly ffprobe: string;
  readonly timeoutMs: number;
  readonly limits: ChildLimits;
}

interface ProbeJson {
  format?: { format_name?: string; duration?: string };
  streams?: { codec_type?: string; codec_name?: string; sample_rate?: string; channels?: number }[];
}

export async function probeAudio(tools: AudioTools, audio: Buffer, signal: AbortSignal): Promise<AudioInfo> {
  const result = await run(
    tools.ffprobe,
    ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', 'pipe:0'],
    { input: audio, timeoutMs: tools.timeoutMs, signal, maxOutputBytes: 1024 * 1024, limits: tools.limits },
    'Reading the audio file took too long',
  );
  let parsed: ProbeJson = {};
  try {
    parsed = JSON.parse(result.stdout.toString() || '{}') as ProbeJson;
  } catch {
    parsed = {};
  }
  const formats = (parsed.format?.format_name ?? '').split(',').filter((f) => f !== '');
  const audioStream = parsed.streams?.find((s) => s.codec_type === 'audio');
  if (result.code !== 0 || formats.length === 0) {
    throw new UnsupportedMediaTypeError(
      `The file is not a readable audio file (ffprobe could not read it); send ${ACCEPTED_LIST}`,
    );
  }
  if (audioStream === undefined) {
    throw new UnsupportedMediaTypeError(
      `The file holds no audio stream (ffprobe found ${formats.join('/')} without audio); send ${ACCEPTED_LIST}`,
    );
  }
  const format = formats.find((f) => f in ACCEPTED_FORMATS);
  if (format === undefined) {
    throw new UnsupportedMediaTypeError(
      `Audio in ${formats.join('/')} is not accepted; send ${ACCEPTED_LIST}`,
    );
  }
  const declared = Number(parsed.format?.duration);
  return {
    format,
    codec: audioStream.codec_name ?? 'unknown',
    sampleRate: Number(audioStream.sample_rate ?? 0),
    channels: audioStream.channels ?? 0,
    declaredSeconds: Number.isFinite(declared) && declared > 0 ? declared : null,
  };
}

/** 16 kHz mono s16le PCM of the whole file; 413 past `maxSeconds`. */
export async function decodeToPcm(
  tools: AudioTools,
  audio: Buffer,
  maxSeconds: number,
  signal: AbortSignal,
): Promise<Buffer> {
  const cut = maxSeconds + 1;
  const result = await run(
    tools.ffmpeg,
    [
      '-hide_banner',
      '-v',
      'error',
      '-i',
      'pipe:0',
      '-vn',
      '-t',
      String(cut),
      '-ac',
      '1',
      '-ar',
      String(SAMPLE_RATE),
      '-c:a',
      'pcm_s16le',
      '-f',
      's16le',
      'pipe:1',
    ],
    {
      input: audio,
      timeoutMs: tools.timeoutMs,
      signal,
      maxOutputBytes: Math.ceil(cut * SAMPLE_RATE * 2) + 64 * 1024,
      limits: tools.limits,
    },
    'Decoding the audio took too long',
  );
  if (result.code !== 0) {
    throw new UnsupportedMediaTypeError(
      'The audio could not be decoded (ffmpeg failed on it); the file may be damaged',
    );
  }
  const pcm = result.stdout.subarray(0, result.stdout.length - (result.stdout.length % 2));
  if (pcmSeconds(pcm.length) > maxSeconds) {
    throw new PayloadTooLargeError(
      `The audio is longer than the ${String(maxSeconds)} s limit (STT_MAX_AUDIO_SECONDS); split it into shorter files`,
      { param: 'file' },
    );
  }
  if (pcm.length === 0) {
    throw new BadRequestError('The audio holds no samples', { code: 'empty_audio', param: 'file' });
  }
  return pcm;
}

/**
 * ffprobe/ffmpeg through the kit's runner: the deadline is 504 (`slow` says which step), an abort
 * the request's own reason, a missing binary 503, its memory limit 413, its CPU limit 422; any
 * exit status comes back for the caller.
 */
async function run(
  command: string,
  args: readonly string[],
  options: RunOptions & { readonly signal: AbortSignal; readonly limits: ChildLimits },
  slow: string,
): Promise<RunResult> {
  try {
    return await new ProcessRunner({ limits: options.limits }).run(command, args, options);
  } catch (error) {
    if (!(error instanceof ProcessError)) throw error;
    if (error.kind === 'timeout') throw new GatewayTimeoutError(slow);
    options.signal.throwIfAborted();
    const limit = limitError(error, 'Decoding the audio', options.limits);
    if (limit !== undefined) throw limit;
    if (error.kind === 'not_found') {
      throw new ServiceUnavailableError(
        `Audio decoding is not available: ${error.command} is not installed (install ffmpeg or set FFMPEG_PATH / FFPROBE_PATH)`,
      );
    }
    throw error;
  }
}

/**
 * An engine process stopped by its limits, as the answer: past its memory 413, past its CPU time
 * 422 (`what` names the step); undefined for any other failure.
 */
export function limitError(error: ProcessError, what: string, limits: ChildLimits): Error | undefined {
  if (error.kind === 'memory_limit') {
    return new PayloadTooLargeError(
      `${what} needed more memory than one engine process may use ` +
        `(${String(Math.round(limits.memoryBytes / 1024 ** 2))} MiB, CHILD_MEMORY_LIMIT); send a shorter file`,
      { param: 'file', cause: error },
    );
  }
  if (error.kind === 'cpu_limit') {
    return new ValidationError(
      [
        {
          loc: ['body', 'file'],
          msg:
            `${what} took more than ${String(limits.cpuSeconds)} s of CPU time (CHILD_CPU_SECONDS) ` +
            'and was stopped; send a shorter file',
          type: 'too_complex',
        },
      ],
      { cause: error },
    );
  }
  return undefined;
}
