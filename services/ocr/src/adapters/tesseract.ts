import { ServiceUnavailableError, type ProcessRunner } from '@clinicalsuite/kit';
import { parseOsd, type Orientation } from '../domain/osd.js';

/**
 * Debian's tesseract 5 command line as the engine: one process per page (the traineddata stays in
 * the page cache, so a process per page is cheap: README, "Engine, and why"), TSV
 * out, one OpenMP thread each so MAX_CONCURRENCY processes use MAX_CONCURRENCY cores. The gate
 * bounds the processes.
 */

export interface TesseractOptions {
  readonly binary: string;
  readonly tessdataDir: string | undefined;
  readonly timeoutMs: number;
}

export interface TesseractInfo {
  readonly version: string;
  readonly languages: readonly string[];
  /** osd.traineddata is there: 90/180/270° pages can be detected. */
  readonly osd: boolean;
}

const ENV = { OMP_THREAD_LIMIT: '1' };

export class Tesseract {
  constructor(
    private readonly runner: ProcessRunner,
    private readonly options: TesseractOptions,
  ) {}

  private get dataArgs(): string[] {
    return this.options.tessdataDir === undefined ? [] : ['--tessdata-dir', this.options.tessdataDir];
  }

  /** Version and installed languages; 503 naming what to install when tesseract is missing. */
  async probe(): Promise<TesseractInfo> {
    const { binary, timeoutMs } = this.options;
    let versionText: string;
    let langsText: string;
    try {
      versionText = (await this.runner.output(binary, ['--version'], { timeoutMs, env: ENV })).toString();
      langsText = (
        await this.runner.output(binary, [...this.dataArgs, '--list-langs'], { timeoutMs, env: ENV })
      ).toString();
    } catch (error) {
      if (error instanceof ServiceUnavailableError) {
        throw new ServiceUnavailableError(
          `tesseract is not installed (${binary} not found): install tesseract-ocr, tesseract-ocr-vie and tesseract-ocr-eng (apt) or set TESSERACT_PATH`,
        );
      }
      throw error;
    }
    const version = /tesseract\s+v?(\d+\.\d+(?:\.\d+)?)/i.exec(versionText)?.[1] ?? 'unknown';
    const languages = langsText
      .split('\n')
      .slice(1)
      .map((l) => l.trim())
      .filter((l) => /^[A-Za-z_]+$/.test(l));
    return { version, languages, osd: languages.includes('osd') };
  }

  /** The page's words as TSV (`langs` such as `vie+eng`). */
  async recognize(png: Buffer, langs: string, signal: AbortSignal, dpi?: number): Promise<string> {
    const args = [
      'stdin',
      'stdout',
      ...this.dataArgs,
      '-l',
      langs,
      '--psm',
      '3',
      ...(dpi === undefined ? [] : ['--dpi', String(dpi)]),
      'tsv',
    ];
    const out = await this.runner.output(this.options.binary, args, {
      input: png,
      timeoutMs: this.options.timeoutMs,
      signal,
      env: ENV,
    });
    return out.toString('utf8');
  }

  /** Orientation of the page's text; null when tesseract found too little text to tell. */
  async orientation(png: Buffer, signal: AbortSignal): Promise<Orientation | null> {
    const result = await this.runner.run(
      this.options.binary,
      ['stdin', 'stdout', ...this.dataArgs, '--psm', '0'],
      { input: png, timeoutMs: this.options.timeoutMs, signal, env: ENV },
    );
    // "Too few characters" exits non-zero on some builds: that is "cannot tell", not a failure.
    return parseOsd(result.stdout.toString('utf8'));
  }
}
