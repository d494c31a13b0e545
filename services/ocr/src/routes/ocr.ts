import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  ValidationError,
  defineRoute,
  multipart,
  uploadedFiles,
  type AnyRoute,
} from '@clinicalsuite/kit';
import { checkPages, decodeGray, inspectImage, isPdf } from '../adapters/image.js';
import type { OcrEngine, PageResult } from '../adapters/ocr-engine.js';
import { requireLanguage } from '../adapters/open-engine.js';
import { PdfDocument, renderedSize } from '../adapters/pdf.js';
import { tesseractLanguages } from '../domain/language.js';
import { meanConfidence } from '../domain/tsv.js';
import { OcrResponseSchema, ocrFormSchema, type OcrForm, type OcrResponse } from '../schemas/ocr.js';
import type { OcrRuntime } from './runtime.js';

/** `POST /ocr`: an image (JPEG, PNG, WebP, TIFF) or a PDF in, text with per-line boxes out. */

type Format = OcrResponse['format'];

interface PageRange {
  readonly first: number;
  readonly last: number;
}

/** The pages to read of a `total`-page document, within `max`; 422 or 413 with what to send. */
export function pageRange(total: number, form: OcrForm, max: number): PageRange {
  const first = form.first_page ?? 1;
  const noun = total === 1 ? 'page' : 'pages';
  if (first > total) {
    throw new ValidationError([
      { loc: ['body', 'first_page'], msg: `the document has ${String(total)} ${noun}`, type: 'too_big' },
    ]);
  }
  if (form.last_page !== undefined) {
    if (form.last_page < first) {
      throw new ValidationError([
        { loc: ['body', 'last_page'], msg: 'must be >= first_page', type: 'too_small' },
      ]);
    }
    if (form.last_page > total) {
      throw new ValidationError([
        { loc: ['body', 'last_page'], msg: `the document has ${String(total)} ${noun}`, type: 'too_big' },
      ]);
    }
  }
  const last = form.last_page ?? total;
  if (last - first + 1 > max) {
    throw new PayloadTooLargeError(
      `The document has ${String(total)} ${noun}; at most ${String(max)} are read per request: ` +
        'send first_page and last_page for a range',
      { param: 'last_page' },
    );
  }
  return { first, last };
}

interface ReadPage {
  readonly page: number;
  readonly result: PageResult;
}

async function readImage(
  rt: OcrRuntime,
  engineFor: () => OcrEngine,
  bytes: Buffer,
  form: OcrForm,
  signal: AbortSignal,
): Promise<{ format: Format; pageCount: number; pages: ReadPage[]; engine: OcrEngine }> {
  const maxPixels = rt.config.MAX_IMAGE_PIXELS;
  const info = await inspectImage(bytes, maxPixels);
  const range = pageRange(info.pages, form, rt.config.MAX_PAGES);
  if (info.pages > 1) await checkPages(bytes, range.first - 1, range.last - 1, maxPixels);
  const engine = engineFor();
  const pages: ReadPage[] = [];
  for (let page = range.first; page <= range.last; page++) {
    signal.throwIfAborted();
    const t0 = performance.now();
    const gray = await decodeGray(bytes, page - 1, maxPixels);
    rt.metrics.stage.observe({ stage: 'decode' }, (performance.now() - t0) / 1000);
    const result = await engine.page(
      gray,
      { language: form.language, autoRotate: form.auto_rotate, deskew: form.deskew },
      signal,
    );
    pages.push({ page, result });
  }
  return { format: info.format, pageCount: info.pages, pages, engine };
}

async function readPdf(
  rt: OcrRuntime,
  engineFor: () => OcrEngine,
  bytes: Buffer,
  form: OcrForm,
  signal: AbortSignal,
): Promise<{ format: Format; pageCount: number; pages: ReadPage[]; engine: OcrEngine }> {
  if (!(rt.engine.value?.pdf ?? false)) {
    throw new ServiceUnavailableError(
      `PDF support is not available: poppler-utils is not installed (${rt.config.PDFINFO_PATH} not found); install poppler-utils or send images`,
    );
  }
  const dpi = form.dpi ?? rt.config.PDF_DPI;
  const maxPixels = rt.config.MAX_IMAGE_PIXELS;
  const doc = await PdfDocument.open(
    rt.runner,
    {
      pdfinfo: rt.config.PDFINFO_PATH,
      pdftoppm: rt.config.PDFTOPPM_PATH,
      timeoutMs: rt.config.OCR_PROCESS_TIMEOUT_MS,
    },
    bytes,
    signal,
  );
  try {
    const range = pageRange(doc.pages, form, rt.config.MAX_PAGES);
    // Every page's pixels are checked before any is rendered, and each is rendered to no more.
    const boxes = (await doc.sizes(range.first, range.last, signal)).map((size) => {
      const box = renderedSize(size, dpi);
      if (box.width * box.height > maxPixels) {
        throw new PayloadTooLargeError(
          `PDF page ${String(size.page)} would be ${String(box.width)}x${String(box.height)} pixels at ${String(dpi)} dpi; ` +
            `at most ${String(maxPixels)} pixels a page are accepted: send a lower dpi`,
          { param: 'dpi' },
        );
      }
      return box;
    });
    const engine = engineFor();
    const pages: ReadPage[] = [];
    for (const [i, box] of boxes.entries()) {
      const page = range.first + i;
      signal.throwIfAborted();
      const t0 = performance.now();
      const png = await doc.render(page, dpi, box, signal);
      rt.metrics.stage.observe({ stage: 'render' }, (performance.now() - t0) / 1000);
      const gray = await decodeGray(png, 0, maxPixels);
      const result = await engine.page(
        gray,
        { language: form.language, autoRotate: form.auto_rotate, deskew: form.deskew, dpi },
        signal,
      );
      pages.push({ page, result });
    }
    return { format: 'pdf', pageCount: doc.pages, pages, engine };
  } finally {
    await doc.close();
  }
}

export function ocrRoute(rt: OcrRuntime): AnyRoute {
  const { config } = rt;
  return defineRoute({
    method: 'post',
    path: '/ocr',
    summary: 'Read the text of an image or PDF: lines with boxes and confidence, Vietnamese and English',
    description:
      'multipart/form-data with the file in the part `file` (JPEG, PNG, WebP, TIFF or PDF) and the optional ' +
      'fields below. Pages turned 90/180/270° and skewed pages are straightened before reading. ' +
      `Limits: ${String(config.MAX_FILE_BYTES)} bytes a file (413), ${String(config.MAX_IMAGE_PIXELS)} pixels a page (413), ` +
      `${String(config.MAX_PAGES)} pages a request (413). Other formats: 415; undecodable files: 400; ` +
      'bad fields or no file: 422; engine not installed: 503. Each engine process runs under CHILD_MEMORY_LIMIT ' +
      '(413 past it) and CHILD_CPU_SECONDS (422 past it).',
    tags: ['ocr'],
    body: ocrFormSchema({
      language: config.OCR_DEFAULT_LANGUAGE,
      dpi: config.PDF_DPI,
      maxDpi: config.PDF_MAX_DPI,
    }),
    bodyContentType: 'multipart/form-data',
    bodyParser: multipart({ files: [{ name: 'file', maxCount: 1 }], maxFileBytes: config.MAX_FILE_BYTES }),
    response: OcrResponseSchema,
    responses: {
      400: { description: 'The file could not be decoded (damaged image or PDF, encrypted PDF, empty file)' },
      413: {
        description:
          'File, page pixels or page count over the limits, or a page that needs more memory than one engine process may use',
      },
      415: { description: 'Not multipart, or a file that is not JPEG, PNG, WebP, TIFF or PDF' },
      503: {
        description: 'tesseract, a language model or poppler-utils is not installed (the reason says which)',
      },
      504: {
        description:
          'The engine took longer than OCR_PROCESS_TIMEOUT_MS on a page, or the request its deadline',
      },
    },
    // The file is checked (format, pixels, pages) before readiness: a malformed request gets its
    // 4xx while the engine is missing too.
    requiresReady: 'in-handler',
    handler: async ({ body, req, signal, log, requireReady }): Promise<OcrResponse> => {
      const started = performance.now();
      const file = uploadedFiles(req, 'file')[0];
      if (file?.buffer === undefined) {
        throw new ValidationError([
          {
            loc: ['body', 'file'],
            msg: 'required: send the image or PDF as a multipart file part named `file`',
            type: 'missing',
          },
        ]);
      }
      if (file.size === 0)
        throw new BadRequestError('The file is empty', { code: 'empty_file', param: 'file' });
      const engineFor = (): OcrEngine => {
        requireReady();
        const { engine } = rt.engine.require();
        requireLanguage(engine, body.language);
        return engine;
      };
      const read = isPdf(file.buffer)
        ? await readPdf(rt, engineFor, file.buffer, body, signal)
        : await readImage(rt, engineFor, file.buffer, body, signal);
      const pages = read.pages.map(({ page, result }) => {
        rt.metrics.pages.inc({ format: read.format });
        if (result.meanConfidence !== null) rt.metrics.confidence.observe(result.meanConfidence);
        if (result.rotationApplied !== 0)
          rt.metrics.rotations.inc({ degrees: String(result.rotationApplied) });
        if (result.skewDegrees !== 0) rt.metrics.deskewed.inc();
        return {
          page,
          width: result.width,
          height: result.height,
          rotation_applied: result.rotationApplied,
          orientation_confidence: result.orientationConfidence,
          skew_degrees: result.skewDegrees,
          text: result.lines.map((l) => l.text).join('\n'),
          mean_confidence: result.meanConfidence,
          lines: result.lines.map((l) => ({ text: l.text, confidence: l.confidence, box: l.box })),
        };
      });
      const elapsed = Math.round((performance.now() - started) * 10) / 10;
      rt.stats.record(pages.length, elapsed);
      const all = read.pages.flatMap((p) => p.result.lines);
      // Counts and timings only: the text is clinical data.
      log.debug(
        { format: read.format, pages: pages.length, lines: all.length, ms: elapsed },
        'read a document',
      );
      return {
        text: pages.map((p) => p.text).join('\n\n'),
        language: body.language,
        mean_confidence: meanConfidence(all),
        pages,
        page_count: read.pageCount,
        format: read.format,
        processing_time_ms: elapsed,
        engine: {
          name: 'tesseract',
          version: read.engine.info.version,
          languages: tesseractLanguages(body.language),
        },
      };
    },
  });
}
