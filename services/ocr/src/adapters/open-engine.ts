import { ServiceUnavailableError, type OpenContext, type ProcessRunner } from '@clinicalsuite/kit';
import sharp from 'sharp';
import type { OcrConfig } from '../config.js';
import { requiredTraineddata, type Language } from '../domain/language.js';
import { OcrEngine, type Stage } from './ocr-engine.js';
import { Tesseract, type TesseractOptions } from './tesseract.js';

/**
 * Brings the engine up after the server listens (the service's kit resource): finds tesseract and
 * its languages and reads one rendered line, so the first request does not pay for loading the
 * models from disk. A missing tesseract or default language fails the open with a reason naming
 * what to install; the kit looks again after a pause, so installing it needs no restart.
 */

export interface OpenEngineOptions {
  readonly runner: ProcessRunner;
  readonly tesseract: TesseractOptions;
  readonly pdf: { readonly pdfinfo: string; readonly timeoutMs: number };
  readonly defaultLanguage: Language;
  readonly observe: (stage: Stage, seconds: number) => void;
}

/** The engine, and whether PDFs can be read (poppler-utils is installed). */
export interface ReadyEngine {
  readonly engine: OcrEngine;
  readonly pdf: boolean;
}

/** The engine's options from the service's configuration. */
export function engineOptions(
  config: OcrConfig,
  runner: ProcessRunner,
  observe: (stage: Stage, seconds: number) => void,
): OpenEngineOptions {
  return {
    runner,
    tesseract: {
      binary: config.TESSERACT_PATH,
      tessdataDir: config.TESSDATA_PREFIX,
      timeoutMs: config.OCR_PROCESS_TIMEOUT_MS,
    },
    pdf: { pdfinfo: config.PDFINFO_PATH, timeoutMs: config.OCR_PROCESS_TIMEOUT_MS },
    defaultLanguage: config.OCR_DEFAULT_LANGUAGE,
    observe,
  };
}

const PACKAGES: Readonly<Record<string, string>> = { vie: 'tesseract-ocr-vie', eng: 'tesseract-ocr-eng' };

export async function openOcrEngine(options: OpenEngineOptions, ctx: OpenContext): Promise<ReadyEngine> {
  ctx.readiness.setNotReady('starting: looking for tesseract');
  // Start-up may read the models from a cold disk: it gets at least a minute, pages get the limit.
  const startUp = new Tesseract(options.runner, {
    ...options.tesseract,
    timeoutMs: Math.max(60_000, options.tesseract.timeoutMs),
  });
  const info = await startUp.probe();
  requireLanguage(new OcrEngine(startUp, info, options.observe), options.defaultLanguage);
  const pdf = await probePdf(options);
  await warmUp(new OcrEngine(startUp, info, () => undefined), options.defaultLanguage, ctx.signal);
  return {
    engine: new OcrEngine(new Tesseract(options.runner, options.tesseract), info, options.observe),
    pdf,
  };
}

/** 503 naming the Debian package when a language's model is not installed. */
export function requireLanguage(engine: OcrEngine, language: Language): void {
  const missing = requiredTraineddata(language).filter((l) => !engine.info.languages.includes(l));
  if (missing.length > 0) {
    throw new ServiceUnavailableError(
      `The tesseract model for ${missing.join(', ')} is not installed: install ${missing
        .map((l) => PACKAGES[l] ?? `tesseract-ocr-${l}`)
        .join(', ')} or put ${missing.map((l) => `${l}.traineddata`).join(', ')} in TESSDATA_PREFIX`,
    );
  }
}

async function probePdf(options: OpenEngineOptions): Promise<boolean> {
  try {
    await options.runner.run(options.pdf.pdfinfo, ['-v'], { timeoutMs: options.pdf.timeoutMs });
    return true;
  } catch {
    return false;
  }
}

/** One short line through the whole pipeline: loads the models into memory and checks they read. */
async function warmUp(engine: OcrEngine, language: Language, signal: AbortSignal): Promise<void> {
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
    { language, autoRotate: false, deskew: false },
    signal,
  );
}
