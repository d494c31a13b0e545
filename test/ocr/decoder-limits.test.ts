import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { greyTiff, pngHeaderBomb } from '../fixtures/bombs.js';
import { EN_NOTE, boxedPdf, nestedFormsPdf, textPdf } from './pages.js';
import { ocr, startOcr, type OcrTestServer } from './helpers.js';

// Files made to cost the service far more than their size, against the real poppler, sharp and
// tesseract: each is a few hundred bytes to a few kilobytes, and each answer must come bounded in
// time and memory, with a page of the size that was checked or a clear 4xx.

const detail = (body: unknown): string => JSON.stringify((body as { detail?: unknown }).detail);

describe('OCR service on PDF render bombs', () => {
  let srv: OcrTestServer;
  beforeAll(async () => {
    srv = await startOcr({ MAX_PAGES: '10', OCR_PROCESS_TIMEOUT_MS: '30000' });
  }, 60_000);
  afterAll(() => srv.close());

  it('renders the CropBox, not an 8000-pt MediaBox under a 10-pt CropBox: 10 pages at 400 dpi in bounded time', async () => {
    // pdfinfo reports the CropBox (10 x 10 pt, 56 x 56 px at 400 dpi), which passes the pixel
    // check; rendered at the MediaBox, one page alone is 44445 x 44445 px (about 2 GB of grey).
    const bomb = boxedPdf(10, { media: [0, 0, 8000, 8000], crop: [0, 0, 10, 10] });
    expect(bomb.length).toBeLessThan(2000);
    const t0 = performance.now();
    const { status, body } = await ocr(srv.url, bomb, { dpi: '400' }, 'bomb.pdf');
    const seconds = (performance.now() - t0) / 1000;
    expect(status).toBe(200);
    expect(body.page_count).toBe(10);
    expect(body.pages.map((p) => [p.width, p.height])).toEqual(Array(10).fill([56, 56]));
    expect(body.text.trim()).toBe('');
    expect(seconds).toBeLessThan(25);
  }, 60_000);

  it('a turned page is rendered to its turned CropBox', async () => {
    const turned = boxedPdf(1, { media: [0, 0, 8000, 8000], crop: [100, 100, 140, 120], rotate: 90 });
    const { status, body } = await ocr(srv.url, turned, { dpi: '144' }, 'turned.pdf');
    expect(status).toBe(200);
    expect([body.pages[0]?.width, body.pages[0]?.height]).toEqual([40, 80]);
  });

  it('413 for a page whose size pdfinfo prints in exponent form (1e+06 pt), instead of a 1-pt page', async () => {
    const huge = boxedPdf(1, { media: [0, 0, 1_000_000, 1_000_000] });
    const { status, body } = await ocr(srv.url, huge, { dpi: '72' }, 'huge.pdf');
    expect(status).toBe(413);
    expect(detail(body)).toContain('1000000x1000000 pixels at 72 dpi');
  });
});

describe('OCR image headers', () => {
  let srv: OcrTestServer;
  beforeAll(async () => {
    srv = await startOcr({ MAX_PAGES: '10' });
  }, 60_000);
  afterAll(() => srv.close());

  it('413 for a PNG whose header claims 100000 x 100000 pixels, before decoding', async () => {
    const { status, body } = await ocr(srv.url, pngHeaderBomb(100_000, 100_000), {}, 'bomb.png');
    expect(status).toBe(413);
    expect(detail(body)).toContain('100000x100000 pixels');
  });

  it('413 naming the page for a TIFF whose second page claims 100000 x 100000, before any page is read', async () => {
    const tiff = greyTiff([
      { width: 16, height: 16, data: Buffer.alloc(256, 255) },
      { width: 100_000, height: 100_000, data: Buffer.alloc(64, 255) },
    ]);
    expect(tiff.length).toBeLessThan(1000);
    const { status, body } = await ocr(srv.url, tiff, {}, 'scan.tiff');
    expect(status).toBe(413);
    expect(detail(body)).toContain('Page 2 is 100000x100000 pixels');
    // The first page alone is read.
    const first = await ocr(srv.url, tiff, { last_page: '1' }, 'scan.tiff');
    expect(first.status).toBe(200);
    expect(first.body.page_count).toBe(2);
  });
});

describe('OCR engine processes under their CPU and memory limits', () => {
  let srv: OcrTestServer;
  beforeAll(async () => {
    srv = await startOcr({
      OCR_PROCESS_TIMEOUT_MS: '30000',
      CHILD_CPU_SECONDS: '2',
      CHILD_MEMORY_LIMIT: '96mb',
      OCR_DEFAULT_LANGUAGE: 'en',
    });
  }, 60_000);
  afterAll(() => srv.close());

  it('422 when a page uses the CPU limit (2^40 nested form fills in 7 KB), long before the process deadline', async () => {
    const bomb = nestedFormsPdf(40);
    expect(bomb.length).toBeLessThan(8000);
    const t0 = performance.now();
    const { status, body } = await ocr(srv.url, bomb, {}, 'forms.pdf');
    expect(status).toBe(422);
    expect(detail(body)).toContain('more than 2 s of CPU time (CHILD_CPU_SECONDS)');
    expect(performance.now() - t0).toBeLessThan(20_000);
  }, 60_000);

  it('413 when tesseract runs out of its memory (it would exit 0 with an empty page), 200 within it', async () => {
    // A letter page at 400 dpi is 3400 x 4400 px: tesseract needs about 175 MiB for it.
    const pdf = textPdf([EN_NOTE.slice(0, 3)]);
    const tight = await ocr(srv.url, pdf, { dpi: '400' }, 'note.pdf');
    expect(tight.status).toBe(413);
    expect(detail(tight.body)).toContain(
      'more memory than one OCR process may use (96 MiB, CHILD_MEMORY_LIMIT)',
    );
    const small = await ocr(srv.url, pdf, { dpi: '100' }, 'note.pdf');
    expect(small.status).toBe(200);
    expect(small.body.text).toContain('CLINICAL NOTE');
  }, 60_000);
});
