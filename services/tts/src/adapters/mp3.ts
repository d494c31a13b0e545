import { ProcessError, runProcess, type ChildLimits } from '@clinicalsuite/kit';

/**
 * ffmpeg with libmp3lame: WAV in on stdin, MP3 out on stdout, the same sample rate, mono, a
 * constant bitrate; under the service's memory and CPU limits.
 */

export interface Mp3Options {
  readonly binary: string;
  readonly bitrateKbps: number;
  readonly timeoutMs: number;
  readonly limits: ChildLimits;
}

export async function encodeMp3(wav: Buffer, options: Mp3Options, signal: AbortSignal): Promise<Buffer> {
  const args = ['-hide_banner', '-loglevel', 'error', '-f', 'wav', '-i', 'pipe:0'];
  args.push('-vn', '-ac', '1', '-codec:a', 'libmp3lame', '-b:a', `${String(options.bitrateKbps)}k`);
  args.push('-f', 'mp3', 'pipe:1');
  return runProcess(options.binary, args, {
    input: wav,
    timeoutMs: options.timeoutMs,
    // MP3 is smaller than the WAV it comes from.
    maxOutputBytes: wav.length + (1 << 20),
    limits: options.limits,
    signal,
  });
}

/** Whether ffmpeg runs and has the libmp3lame encoder; the reason when not. */
export async function probeMp3(
  binary: string,
  timeoutMs: number,
  limits: ChildLimits,
): Promise<string | undefined> {
  try {
    const encoders = await runProcess(binary, ['-hide_banner', '-encoders'], {
      timeoutMs,
      maxOutputBytes: 4 << 20,
      limits,
    });
    return /\blibmp3lame\b/.test(encoders.toString('utf8'))
      ? undefined
      : `${binary} has no libmp3lame encoder (install Debian's ffmpeg)`;
  } catch (error) {
    return error instanceof ProcessError ? error.message : String(error);
  }
}
