import { ProcessError, runProcess, type ChildLimits } from '@clinicalsuite/kit';
import { pcmFromWav, type PcmAudio } from '../domain/wav.js';

/**
 * espeak-ng (the Debian package) as a child process per request: the text on stdin, read as
 * UTF-8 (`-b 1`) and as plain text (no `-m`: SSML and other markup are not interpreted), WAV on
 * stdout. Also the phonemizer of the Piper voices (`-q --ipa`), as Piper itself uses espeak-ng.
 * Every run is under the service's memory and CPU limits.
 */

export interface EspeakOptions {
  readonly binary: string;
  readonly timeoutMs: number;
  /** Upper bound on the WAV it may write (a 5000-character text at half speed is ~30 MB). */
  readonly maxOutputBytes: number;
  readonly limits: ChildLimits;
}

export interface EspeakProbe {
  readonly version: string;
  readonly voices: readonly string[];
}

export class Espeak {
  constructor(private readonly options: EspeakOptions) {}

  get binary(): string {
    return this.options.binary;
  }

  /** Its version and the voice names it has (`--voices`), or a ProcessError when it cannot run. */
  async probe(signal?: AbortSignal): Promise<EspeakProbe> {
    const run = (args: string[]) =>
      runProcess(this.options.binary, args, {
        timeoutMs: this.options.timeoutMs,
        maxOutputBytes: 1 << 20,
        limits: this.options.limits,
        ...(signal === undefined ? {} : { signal }),
      });
    const version = (await run(['--version'])).toString('utf8').trim();
    const listing = (await run(['--voices'])).toString('utf8');
    const voices = listing
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .flatMap((cols) => {
        // Pty Language Age/Gender VoiceName File Other-languages
        const language = cols[1];
        const file = cols[4];
        return [language, file].filter((v): v is string => v !== undefined && v !== '');
      });
    return { version: /eSpeak NG text-to-speech: (\S+)/.exec(version)?.[1] ?? version, voices };
  }

  /** Speech for `text` in `voice` at `wordsPerMinute`, as mono 16-bit PCM (22050 Hz). */
  async synthesize(
    text: string,
    voice: string,
    wordsPerMinute: number,
    signal: AbortSignal,
  ): Promise<PcmAudio> {
    const wav = await runProcess(
      this.options.binary,
      ['-b', '1', '-v', voice, '-s', String(wordsPerMinute), '--stdin', '--stdout'],
      {
        input: text,
        timeoutMs: this.options.timeoutMs,
        maxOutputBytes: this.options.maxOutputBytes,
        limits: this.options.limits,
        signal,
      },
    );
    try {
      return pcmFromWav(wav);
    } catch (error) {
      throw new ProcessError(
        'exit',
        this.options.binary,
        `${this.options.binary} wrote no usable WAV: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /** espeak-ng's IPA for one sentence: one line per clause, stress marks kept, no tie bars. */
  async phonemize(sentence: string, voice: string, signal: AbortSignal): Promise<string[]> {
    const out = await runProcess(this.options.binary, ['-q', '-b', '1', '--ipa', '-v', voice, '--stdin'], {
      input: sentence,
      timeoutMs: this.options.timeoutMs,
      maxOutputBytes: 1 << 20,
      limits: this.options.limits,
      signal,
    });
    return out
      .toString('utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');
  }
}
