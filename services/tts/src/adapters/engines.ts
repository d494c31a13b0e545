import { setTimeout as sleep } from 'node:timers/promises';
import { ProcessError, type ChildLimits, type Logger, type Readiness } from '@clinicalsuite/kit';
import type { Language } from '../domain/language.js';
import { Espeak, type EspeakProbe } from './espeak.js';
import { probeMp3 } from './mp3.js';
import type { PiperOnnxVoice } from './piper.js';
import { loadVoices, type VoiceSources } from './voices.js';

/**
 * The engines a running service holds: espeak-ng (required: it speaks every language and
 * phonemizes for Piper), the Piper voices found, and ffmpeg for MP3. Started after the server
 * listens; the service is ready once espeak-ng answered with the voices it needs and the Piper
 * voices were loaded (or found unusable). A missing espeak-ng keeps it not ready with the reason,
 * and is looked for again until it appears.
 */

export interface EnginesOptions {
  readonly espeak: Espeak;
  readonly espeakVoices: Readonly<Record<Language, string>>;
  readonly voiceSources: VoiceSources;
  readonly ffmpeg: string;
  readonly probeTimeoutMs: number;
  /** ffmpeg's memory and CPU limits (espeak-ng has its own in its options). */
  readonly limits: ChildLimits;
  readonly readiness: Readiness;
  readonly logger: Logger;
  /** How often a missing espeak-ng is looked for again. */
  readonly retryMs: number;
}

export class TtsEngines {
  private probeResult: EspeakProbe | undefined;
  private loaded = new Map<Language, PiperOnnxVoice>();
  private problemsValue: string[] = [];
  private mp3Reason: string | undefined = 'not checked yet';
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;

  constructor(private readonly options: EnginesOptions) {}

  get espeak(): Espeak {
    return this.options.espeak;
  }

  get espeakVersion(): string | undefined {
    return this.probeResult?.version;
  }

  get voices(): ReadonlyMap<Language, PiperOnnxVoice> {
    return this.loaded;
  }

  /** Voices found but not loaded, and why. */
  get problems(): readonly string[] {
    return this.problemsValue;
  }

  /** Why MP3 cannot be made, or undefined when it can. */
  get mp3Unavailable(): string | undefined {
    return this.mp3Reason;
  }

  start(): void {
    this.running ??= this.run().catch((error: unknown) => {
      if (this.stop.signal.aborted) return;
      const message = error instanceof Error ? error.message : String(error);
      this.options.readiness.setNotReady(`the engines failed to start: ${message}`);
      this.options.logger.error({ err: error }, 'engines failed to start');
    });
  }

  async settled(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    const { readiness, logger } = this.options;
    readiness.setNotReady('checking espeak-ng');
    for (;;) {
      const reason = await this.probeEspeak();
      if (reason === undefined) break;
      readiness.setNotReady(reason);
      logger.warn({ reason }, 'espeak-ng is not usable; looking again');
      try {
        await sleep(this.options.retryMs, undefined, { signal: this.stop.signal });
      } catch {
        return; // closed
      }
    }
    this.mp3Reason = await probeMp3(this.options.ffmpeg, this.options.probeTimeoutMs, this.options.limits);
    if (this.mp3Reason !== undefined) logger.warn({ reason: this.mp3Reason }, 'MP3 output unavailable');
    readiness.setNotReady('loading Piper voices');
    const { voices, problems } = await loadVoices(this.options.voiceSources);
    if (this.stop.signal.aborted) {
      for (const v of voices.values()) await v.dispose();
      return;
    }
    this.loaded = voices;
    this.problemsValue = problems;
    for (const problem of problems) logger.warn({ problem }, 'Piper voice not used');
    logger.info(
      {
        espeak: this.probeResult?.version,
        piper: Object.fromEntries([...voices].map(([lang, v]) => [lang, v.id])),
        mp3: this.mp3Reason === undefined,
      },
      'engines ready',
    );
    readiness.setReady();
  }

  /** undefined when espeak-ng runs and has the voices configured, else the reason. */
  private async probeEspeak(): Promise<string | undefined> {
    try {
      const probe = await this.options.espeak.probe(this.stop.signal);
      const missing = Object.entries(this.options.espeakVoices)
        .filter(([, voice]) => !probe.voices.includes(voice))
        .map(([lang, voice]) => `${voice} (for ${lang})`);
      if (missing.length > 0) {
        return `espeak-ng ${probe.version} lacks the voice(s) ${missing.join(', ')}: see \`espeak-ng --voices\``;
      }
      this.probeResult = probe;
      return undefined;
    } catch (error) {
      if (error instanceof ProcessError && error.kind === 'not_found') {
        return `espeak-ng not found (${this.options.espeak.binary}): install the Debian package espeak-ng or set ESPEAK_PATH`;
      }
      return `espeak-ng does not run: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  /** Stops looking and frees the voices (requests still running were aborted, killing their processes). */
  async close(): Promise<void> {
    this.stop.abort();
    await this.running;
    const voices = [...this.loaded.values()];
    this.loaded = new Map();
    for (const v of voices) await v.dispose();
  }
}
