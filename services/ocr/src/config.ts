import { ConfigError, env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { z } from 'zod';
import { LANGUAGES } from './domain/language.js';

/**
 * The OCR service's configuration: the kit's variables (2 pages in work at once, one tesseract
 * process each, on a 2-core machine; every engine process under CHILD_MEMORY_LIMIT and
 * CHILD_CPU_SECONDS) and the pipeline's limits. Parsed once, at start-up.
 */

export const ocrConfigSchema = kitConfigSchema({
  port: 8012,
  maxConcurrency: 2,
  queueSize: 32,
  queueTimeoutMs: 60_000,
  requestTimeoutMs: 120_000,
  // Multipart bodies are limited per file (below); this bounds JSON bodies only.
  bodyLimit: '1mb',
  // Room for tesseract on a page of MAX_IMAGE_PIXELS (services/ocr/README.md, Limits).
  childMemoryLimit: '1gb',
  childCpuSeconds: 60,
}).extend({
  /** The token that callers present (scope `ocr`); AUTH_TOKENS_FILE may add more. */
  OCR_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** The tesseract 5 command line (Debian's tesseract-ocr). */
  TESSERACT_PATH: z.string().min(1).default('tesseract'),
  /** Where vie/eng/osd.traineddata are; default: tesseract's own (/usr/share/tesseract-ocr/5/tessdata). */
  TESSDATA_PREFIX: z.string().min(1).optional(),
  /** poppler-utils' pdfinfo and pdftoppm for PDF uploads; without them PDFs answer 503. */
  PDFINFO_PATH: z.string().min(1).default('pdfinfo'),
  PDFTOPPM_PATH: z.string().min(1).default('pdftoppm'),
  /** Language when a request names none: `vi+en` (Vietnamese notes carry English drug names and terms). */
  OCR_DEFAULT_LANGUAGE: z.enum(LANGUAGES).default('vi+en'),
  /** Longest run of one tesseract, pdfinfo or pdftoppm process before it is killed (504). */
  OCR_PROCESS_TIMEOUT_MS: env.int({ min: 100, max: 600_000 }).default(60_000),
  /** Largest upload (bytes or 20mb style). */
  MAX_FILE_BYTES: env.bytes().default(20 * 1024 * 1024),
  /** Largest page in pixels (decompression bombs are refused from the header, before decoding). */
  MAX_IMAGE_PIXELS: env.int({ min: 1, max: 400_000_000 }).default(40_000_000),
  /** Most pages of a PDF or multi-page TIFF per request (ask for a range with first_page/last_page). */
  MAX_PAGES: env.int({ min: 1, max: 500 }).default(10),
  /** Resolution PDF pages are rendered at when a request names none. */
  PDF_DPI: env.int({ min: 72, max: 600 }).default(200),
  /** Highest `dpi` a request may ask for. */
  PDF_MAX_DPI: env.int({ min: 72, max: 1200 }).default(400),
});

export type OcrConfig = z.output<typeof ocrConfigSchema>;

type Env = Readonly<Record<string, string | undefined>>;

export function loadOcrConfig(source: Env = process.env): OcrConfig {
  const config = loadConfig(ocrConfigSchema, source);
  if (config.PDF_DPI > config.PDF_MAX_DPI) {
    throw new ConfigError([
      `PDF_DPI: ${String(config.PDF_DPI)} is above PDF_MAX_DPI (${String(config.PDF_MAX_DPI)})`,
    ]);
  }
  return config;
}
