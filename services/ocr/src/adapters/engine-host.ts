import { ServiceUnavailableError, type Logger, type ProcessRunner, type Readiness } from '@clinicalsuite/kit';
import sharp from 'sharp';
import { requiredTraineddata, type Language } from '../domain/language.js';
import { OcrEngine, type Stage } from './ocr-engine.js';
import { Tesseract, type TesseractOptions } from './tesseract.js';

/**
 * Brings the engine up after the server listens: finds tesseract and its languages, reads one
 * rendered line (so the first request does not pay for loading the models from disk), and sets
 * readiness; until then, and while tesseract or the default language is missing, the service is
 * not ready with a reason naming what to install. A missing engine is looked for again every
 * `retryMs`, so installing it needs no restart.
 */

export interface EngineHostOptions {
  readonly runner: ProcessRunner;
  readonly tesseract: TesseractOptions;
  readonly pdf: { readonly pdfinfo: string; readonly timeoutMs: number };
  readonly defaultLanguage: Language;
  readonly readiness: Readiness;
  readonly logger: Logger;
  readonly retryMs: number;
  readonly observe: (stage: Stage, seconds: number) => void;
}

const PACKAGES: Readonly<Record<string, string>> = { vie: 'tesseract-ocr-vie', eng: 'tesseract-ocr-eng' };

export class EngineHost {
  private current: OcrEngine | undefined;
  private pdfAvailable = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;

  constructor(private readonly options: EngineHostOptions) {}

  get engine(): OcrEngine | undefined {
    return this.current;
  }

  get pdf(): boolean {
    return this.pdfAvailable;
  }

  /** The engine, or 503 with the reason. */
  require(): OcrEngine {
    if (this.current === undefined) {
      throw new ServiceUnavailableError(
        `The OCR engine is not ready: ${this.options.readiness.reason ?? 'starting'}`,
      );
    }
    return this.current;
  }

  /** 503 naming the Debian package when a language's model is not installed. */
  requireLanguage(engine: OcrEngine, language: Language): void {
    const missing = requiredTraineddata(language).filter((l) => !engine.info.languages.includes(l));
    if (missing.length > 0) {
      throw new ServiceUnavailableError(
        `The tesseract model for ${missing.join(', ')} is not installed: install ${missing
          .map((l) => PACKAGES[l] ?? `tesseract-ocr-${l}`)
          .join(', ')} or put ${missing.map((l) => `${l}.traineddata`).join(', ')} in TESSDATA_PREFIX`,
      );
    }
  }

  start(): void {
    this.running ??= this.attempt();
  }

  /** Resolves once the first attempt finished (ready or not). */
  async settled(): Promise<void> {
    await this.running;
  }

  private async attempt(): Promise<void> {
    const { readiness, logger } = this.options;
    try {
      // Start-up may read the models from a cold disk: it gets at least a minute, pages get the limit.
      const startUp = new Tesseract(this.options.runner, {
        ...this.options.tesseract,
        timeoutMs: Math.max(60_000, this.options.tesseract.timeoutMs),
      });
      const info = await startUp.probe();
      this.requireLanguage(new OcrEngine(startUp, info, this.options.observe), this.options.defaultLanguage);
      this.pdfAvailable = await this.probePdf();
      await this.warmUp(new OcrEngine(startUp, info, () => undefined));
      const engine = new OcrEngine(
        new Tesseract(this.options.runner, this.options.tesseract),
        info,
        this.options.observe,
      );
      if (this.stopped) return;
      this.current = engine;
      readiness.setReady();
      logger.info(
        { engine: 'tesseract', version: info.version, languages: info.languages, pdf: this.pdfAvailable },
        'OCR engine ready',
      );
    } catch (error) {
      if (this.stopped) return;
      const reason = error instanceof Error ? error.message : String(error);
      readiness.setNotReady(reason);
      logger.error({ err: error }, 'OCR engine not available');
      this.timer = setTimeout(() => {
        this.running = this.attempt();
      }, this.options.retryMs);
      this.timer.unref();
    }
  }

  private async probePdf(): Promise<boolean> {
    try {
      await this.options.runner.run(this.options.pdf.pdfinfo, ['-v'], {
        timeoutMs: this.options.pdf.timeoutMs,
      });
      return true;
    } catch {
      return false;
    }
  }

  /** One short line through the whole pipeline: loads the models into memory and checks they read. */
  private async warmUp(engine: OcrEngine): Promise<void> {
    const svg =
      '<svg xmlns="http://www.w3.org/2000/svg" width="420" height="80"><rect width="100%" height="100%" fill="#fff"/>' +
      '<text x="20" y="52" font-family="DejaVu Sans, sans-serif" font-size="30" fill="#000">Warm up 123</text></svg>';
    const { data, info } = await sharp(Buffer.from(svg))
      .greyscale()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const gray = new Uint8Array(info.width * info.height);
    for (let i = 0; i < gray.length; i++) gray[i] = data[i * info.channels] ?? 255;
    await engine.page(
      { width: info.width, height: info.height, data: gray },
      { language: this.options.defaultLanguage, autoRotate: false, deskew: false },
      this.abort.signal,
    );
  }

  close(): void {
    this.stopped = true;
    this.abort.abort(new Error('shutting down'));
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.current = undefined;
  }
}
