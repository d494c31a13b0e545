import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { EN_NOTE, VI_NOTE, characterAccuracy, renderNote, textPdf } from './pages.js';
import { ocr, startOcr, type OcrBody, type OcrTestServer, type Page } from './helpers.js';

// The OCR service with the real engine (Debian's tesseract 5, vie + eng + osd, poppler-utils) on
// clinical notes rendered here, served on a real socket. Accuracy is 1 - CER over characters with
// diacritics; the thresholds sit below what was measured (in the comments) with margin.

let srv: OcrTestServer;
let viPage: Buffer;
let enPage: Buffer;
const VI = VI_NOTE.join('\n');
const EN = EN_NOTE.join('\n');

beforeAll(async () => {
  srv = await startOcr({ MAX_FILE_BYTES: '2mb', MAX_IMAGE_PIXELS: '8000000', MAX_PAGES: '3' });
  viPage = await renderNote(VI_NOTE);
  enPage = await renderNote(EN_NOTE);
}, 60_000);
afterAll(() => srv.close());

function expectBoxesInside(page: Page): void {
  expect(page.lines.length).toBeGreaterThan(0);
  for (const line of page.lines) {
    const { x, y, width, height } = line.box;
    expect(x).toBeGreaterThanOrEqual(0);
    expect(y).toBeGreaterThanOrEqual(0);
    expect(width).toBeGreaterThan(0);
    expect(height).toBeGreaterThan(0);
    expect(x + width).toBeLessThanOrEqual(page.width);
    expect(y + height).toBeLessThanOrEqual(page.height);
    expect(line.confidence).toBeGreaterThanOrEqual(0);
    expect(line.confidence).toBeLessThanOrEqual(1);
  }
}

/** The line whose text is closest to `text`. */
function lineOf(page: Page, text: string) {
  return page.lines.reduce((best, l) =>
    characterAccuracy(text, l.text) > characterAccuracy(text, best.text) ? l : best,
  );
}

describe('OCR service on rendered clinical notes', () => {
  it('is healthy with tesseract and describes itself', async () => {
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      status: 'healthy',
      service: 'ocr',
      engine: expect.stringMatching(/^tesseract 5\./),
    });
    const root = (await (await fetch(`${srv.url}/`)).json()) as Record<string, unknown>;
    expect(root).toMatchObject({ service: 'ocr', status: 'ready', docs: '/docs', port: 0 });
    const status = (await (await fetch(`${srv.url}/status`)).json()) as { engine: Record<string, unknown> };
    expect(status.engine).toMatchObject({ name: 'tesseract', orientation_detection: true, pdf: true });
    expect(status.engine['languages']).toEqual(expect.arrayContaining(['vie', 'eng', 'osd']));
    const gpu = (await (await fetch(`${srv.url}/gpu_status`)).json()) as Record<string, unknown>;
    expect(gpu).toMatchObject({ available: false });
    const openapi = (await (await fetch(`${srv.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(openapi.paths)).toContain('/ocr');
  });

  it('reads a Vietnamese note with its diacritics (measured 1.000)', async () => {
    const { status, body } = await ocr(srv.url, viPage);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      language: 'vi+en',
      format: 'png',
      page_count: 1,
      engine: { name: 'tesseract', languages: 'vie+eng' },
    });
    expect(characterAccuracy(VI, body.text)).toBeGreaterThanOrEqual(0.98);
    const page = body.pages[0]!;
    expect(page).toMatchObject({ page: 1, width: 1700, rotation_applied: 0, skew_degrees: 0 });
    expectBoxesInside(page);
    expect(page.lines).toHaveLength(VI_NOTE.length);
    // The second line is drawn at y = 150 + 61 (baseline) in 34 px type from x = 100.
    const name = lineOf(page, VI_NOTE[1]!);
    expect(name.box.x).toBeGreaterThanOrEqual(95);
    expect(name.box.x).toBeLessThanOrEqual(110);
    expect(name.box.y).toBeGreaterThan(211 - 40);
    expect(name.box.y + name.box.height).toBeLessThan(211 + 15);
    expect(body.mean_confidence).toBeGreaterThan(0.85);
  });

  it('reads an English note with language en and with vi+en alike (measured 1.000 both)', async () => {
    const en = await ocr(srv.url, enPage, { language: 'en' });
    expect(en.status).toBe(200);
    expect(en.body.engine.languages).toBe('eng');
    expect(characterAccuracy(EN, en.body.text)).toBeGreaterThanOrEqual(0.98);
    const both = await ocr(srv.url, enPage);
    expect(characterAccuracy(EN, both.body.text)).toBeGreaterThanOrEqual(0.98);
  });

  it('reads pages turned 90°, 180° and 270° upright, with boxes on the page as uploaded (measured 1.000)', async () => {
    for (const [turn, source, truth, fix] of [
      [90, viPage, VI, 270],
      [180, viPage, VI, 180],
      [270, enPage, EN, 90],
    ] as const) {
      const turned = await sharp(source).rotate(turn).png().toBuffer();
      const { status, body } = await ocr(srv.url, turned);
      expect(status).toBe(200);
      const page = body.pages[0]!;
      expect(page.rotation_applied).toBe(fix);
      expect(page.orientation_confidence).toBeGreaterThan(2);
      expect(characterAccuracy(truth, body.text)).toBeGreaterThanOrEqual(0.97);
      expectBoxesInside(page);
      if (turn !== 180) {
        // Lines run down the uploaded (sideways) page: their boxes are tall.
        expect(page.width).toBe(728);
        const l = lineOf(page, (truth === VI ? VI_NOTE : EN_NOTE)[1]!);
        expect(l.box.height).toBeGreaterThan(l.box.width);
      }
    }
  }, 60_000);

  it('straightens pages skewed by 3-5° before reading them (measured 1.000)', async () => {
    for (const [angle, source, truth] of [
      [4, viPage, VI],
      [-3.5, enPage, EN],
      [5, enPage, EN],
    ] as const) {
      const skewed = await sharp(source)
        .rotate(angle, { background: '#fff' })
        .jpeg({ quality: 90 })
        .toBuffer();
      const { status, body } = await ocr(srv.url, skewed, {}, 'skewed.jpg');
      expect(status).toBe(200);
      const page = body.pages[0]!;
      expect(Math.abs(page.skew_degrees - angle)).toBeLessThanOrEqual(0.3);
      expect(characterAccuracy(truth, body.text)).toBeGreaterThanOrEqual(0.97);
      expectBoxesInside(page);
    }
  }, 60_000);

  it('reads a small, blurred, heavily compressed JPEG of the Vietnamese note (measured 0.997)', async () => {
    const small = await renderNote(VI_NOTE, { width: 900, fontSize: 17 });
    const poor = await sharp(small).blur(0.8).jpeg({ quality: 35 }).toBuffer();
    const { body } = await ocr(srv.url, poor, { language: 'vi' }, 'scan.jpg');
    expect(characterAccuracy(VI, body.text)).toBeGreaterThanOrEqual(0.95);
  });

  it('applies EXIF orientation, and reads WebP and multi-page TIFF', async () => {
    // Stored sideways with EXIF orientation 6 ("turn 90° clockwise to view"): read as displayed.
    const exif = await sharp(viPage).rotate(270).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const fromExif = await ocr(srv.url, exif, {}, 'exif.jpg');
    expect(fromExif.body.pages[0]).toMatchObject({ width: 1700, rotation_applied: 0 });
    expect(characterAccuracy(VI, fromExif.body.text)).toBeGreaterThanOrEqual(0.98);
    const webp = await ocr(srv.url, await sharp(enPage).webp({ lossless: true }).toBuffer(), {}, 'a.webp');
    expect(webp.body.format).toBe('webp');
    expect(characterAccuracy(EN, webp.body.text)).toBeGreaterThanOrEqual(0.98);
    const tiff = await sharp([viPage, enPage], { join: { animated: true } })
      .tiff()
      .toBuffer();
    const both = await ocr(srv.url, tiff, {}, 'scan.tiff');
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ format: 'tiff', page_count: 2 });
    expect(both.body.pages.map((p) => p.page)).toEqual([1, 2]);
    expect(characterAccuracy(`${VI}\n\n${EN}`, both.body.text)).toBeGreaterThanOrEqual(0.98);
  });

  it('reads PDF pages rendered at the requested dpi, and ranges of them', async () => {
    const pdf = textPdf([EN_NOTE.slice(0, 4), EN_NOTE.slice(4)]);
    const { status, body } = await ocr(srv.url, pdf, { dpi: '150' }, 'note.pdf');
    expect(status).toBe(200);
    expect(body).toMatchObject({ format: 'pdf', page_count: 2 });
    // US Letter at 150 dpi.
    expect(body.pages[0]).toMatchObject({ page: 1, width: 1275, height: 1650 });
    expect(characterAccuracy(EN, body.text)).toBeGreaterThanOrEqual(0.98);
    body.pages.forEach(expectBoxesInside);
    const second = await ocr(srv.url, pdf, { first_page: '2' }, 'note.pdf');
    expect(second.body.pages.map((p) => p.page)).toEqual([2]);
    expect(characterAccuracy(EN_NOTE.slice(4).join('\n'), second.body.text)).toBeGreaterThanOrEqual(0.98);
  }, 60_000);

  it('answers a blank page with no text rather than inventing some', async () => {
    const blank = await sharp({ create: { width: 800, height: 600, channels: 3, background: '#fff' } })
      .png()
      .toBuffer();
    const { status, body } = await ocr(srv.url, blank);
    expect(status).toBe(200);
    expect(body).toMatchObject({ text: '', mean_confidence: null });
    expect(body.pages[0]).toMatchObject({ lines: [], mean_confidence: null, rotation_applied: 0 });
  });
});

describe('OCR service refuses bad input with the right status', () => {
  const detail = (b: OcrBody) => JSON.stringify(b.detail);

  it('415 for a body that is not multipart and for files that are not JPEG, PNG, WebP, TIFF or PDF', async () => {
    const json = await fetch(`${srv.url}/ocr`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(415);
    const text = await ocr(srv.url, Buffer.from('Bệnh nhân: not an image'), {}, 'note.txt');
    expect(text.status).toBe(415);
    expect(detail(text.body)).toContain('JPEG, PNG, WebP, TIFF or PDF');
    const gif = await ocr(srv.url, await sharp(viPage).gif().toBuffer(), {}, 'a.gif');
    expect(gif.status).toBe(415);
    expect(detail(gif.body)).toContain('GIF');
    const svg = await ocr(
      srv.url,
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'),
      {},
      'a.svg',
    );
    expect(svg.status).toBe(415);
  });

  it('422 listing the fields: no file, a language it does not know, a dpi out of range', async () => {
    const none = await ocr(srv.url, undefined, { language: 'vi' });
    expect(none.status).toBe(422);
    expect(detail(none.body)).toContain('file');
    const lang = await ocr(srv.url, enPage, { language: 'fr', dpi: '5000' });
    expect(lang.status).toBe(422);
    expect(detail(lang.body)).toContain('language');
    expect(detail(lang.body)).toContain('dpi');
    const page = await ocr(srv.url, enPage, { first_page: '2' });
    expect(page.status).toBe(422);
    expect(detail(page.body)).toContain('first_page');
  });

  it('400 for a damaged image, an empty file and a damaged PDF', async () => {
    const truncated = await ocr(srv.url, viPage.subarray(0, Math.floor(viPage.length / 2)));
    expect(truncated.status).toBe(400);
    expect(detail(truncated.body)).toContain('could not be decoded');
    expect((await ocr(srv.url, Buffer.alloc(0))).status).toBe(400);
    const pdf = await ocr(srv.url, Buffer.from('%PDF-1.4\n1 0 obj garbage'), {}, 'x.pdf');
    expect(pdf.status).toBe(400);
    expect(detail(pdf.body)).toContain('PDF');
  });

  it('413 for a file over MAX_FILE_BYTES, a pixel bomb, too many pages, a PDF page too large at its dpi', async () => {
    const big = await ocr(srv.url, Buffer.alloc(3 * 1024 * 1024, 1), {}, 'big.png');
    expect(big.status).toBe(413);
    // 4000 x 4000 white pixels compress to a few KB but are 16 Mpx (the limit here is 8).
    const bomb = await sharp({ create: { width: 4000, height: 4000, channels: 3, background: '#fff' } })
      .greyscale()
      .png()
      .toBuffer();
    expect(bomb.length).toBeLessThan(200_000);
    const pixels = await ocr(srv.url, bomb);
    expect(pixels.status).toBe(413);
    expect(detail(pixels.body)).toContain('4000x4000');
    const pages = await ocr(srv.url, textPdf([['a'], ['b'], ['c'], ['d']]), {}, 'x.pdf');
    expect(pages.status).toBe(413);
    expect(detail(pages.body)).toContain('first_page and last_page');
    const dpi = await ocr(srv.url, textPdf([['a']]), { dpi: '400' }, 'x.pdf');
    expect(dpi.status).toBe(413);
    expect(detail(dpi.body)).toContain('lower dpi');
  });

  it('never logs the text it read, and counts pages in ocr_ metrics', async () => {
    const logged = JSON.stringify(srv.logs);
    expect(logged).not.toContain('Nguyễn');
    expect(logged).not.toContain('John Miller');
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/ocr_pages_total\{format="png",service="ocr"\} [1-9]/);
    expect(metrics).toMatch(/ocr_page_rotations_total\{degrees="180",service="ocr"\} [1-9]/);
    expect(metrics).toMatch(/ocr_stage_duration_seconds_count\{service="ocr",stage="recognize"\} [1-9]/);
    expect(metrics).toMatch(/ocr_pages_deskewed_total\{service="ocr"\} [1-9]/);
  });
});

describe('OCR service without its engine', () => {
  it('is not ready, says what to install, and answers 503 to /ocr', async () => {
    const missing = await startOcr({ TESSERACT_PATH: '/nonexistent/tesseract' });
    try {
      const health = await fetch(`${missing.url}/health`);
      expect(health.status).toBe(503);
      const body = (await health.json()) as { reason: string };
      expect(body.reason).toContain('tesseract-ocr');
      const { status, body: res } = await ocr(missing.url, enPage);
      expect(status).toBe(503);
      expect(JSON.stringify(res.detail)).toContain('tesseract');
      // A file that is no image or PDF is refused as such while the engine is missing too.
      expect((await ocr(missing.url, Buffer.from('plain text, not an image'))).status).toBe(415);
    } finally {
      await missing.close();
    }
  });

  it('answers 503 naming the package when a language model is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessdata-eng-'));
    symlinkSync('/usr/share/tesseract-ocr/5/tessdata/eng.traineddata', join(dir, 'eng.traineddata'));
    const engOnly = await startOcr({ TESSDATA_PREFIX: dir, OCR_DEFAULT_LANGUAGE: 'en' });
    try {
      expect((await fetch(`${engOnly.url}/health`)).status).toBe(200);
      const vi = await ocr(engOnly.url, viPage, { language: 'vi' });
      expect(vi.status).toBe(503);
      expect(JSON.stringify(vi.body.detail)).toContain('tesseract-ocr-vie');
      const en = await ocr(engOnly.url, enPage, { language: 'en' });
      expect(en.status).toBe(200);
      // No osd.traineddata: a turned page is read as it is, not turned.
      expect(
        (await ocr(engOnly.url, await sharp(enPage).rotate(180).png().toBuffer(), { language: 'en' })).body
          .pages[0]!.rotation_applied,
      ).toBe(0);
    } finally {
      await engOnly.close();
    }
  }, 60_000);
});

describe('OCR service engine processes', () => {
  /** tesseract processes that are children of this test process. */
  const tesseractChildren = (): string[] =>
    execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)])
      .toString()
      .split('\n')
      .filter((l) => l.includes('tesseract'));
  const settle = async (url: string): Promise<number> => {
    for (let i = 0; i < 50; i++) {
      const status = (await (await fetch(`${url}/status`)).json()) as { engine_processes: number };
      if (status.engine_processes === 0) return 0;
      await new Promise((r) => setTimeout(r, 50));
    }
    return -1;
  };

  it('kills tesseract when a page takes longer than OCR_PROCESS_TIMEOUT_MS (504), when the request passes its deadline (504) and when the client goes away', async () => {
    const slow = await startOcr({ OCR_PROCESS_TIMEOUT_MS: '100' });
    try {
      const { status, body } = await ocr(slow.url, viPage);
      expect(status).toBe(504);
      expect(JSON.stringify(body.detail)).toContain('longer than 100 ms');
      expect(JSON.stringify(body)).not.toMatch(/tesseract.*(Error|stderr|Warning)/);
    } finally {
      await slow.close();
    }
    const deadline = await startOcr({ REQUEST_TIMEOUT_MS: '400', MAX_PAGES: '4' });
    try {
      const tiff = await sharp([viPage, enPage, viPage, enPage], { join: { animated: true } })
        .tiff()
        .toBuffer();
      const { status } = await ocr(deadline.url, tiff, {}, 'long.tiff');
      expect(status).toBe(504);
      expect(await settle(deadline.url)).toBe(0);
      expect(tesseractChildren()).toEqual([]);
      // The rest of the document is not read once the request is over.
      const recognized = async () =>
        /ocr_stage_duration_seconds_count\{service="ocr",stage="recognize"\} (\d+)/.exec(
          await (await fetch(`${deadline.url}/metrics`)).text(),
        )?.[1];
      const before = await recognized();
      await new Promise((r) => setTimeout(r, 1500));
      expect(await recognized()).toBe(before);

      const controller = new AbortController();
      const form = new FormData();
      form.append('file', new Blob([tiff]), 'long.tiff');
      const request = fetch(`${deadline.url}/ocr`, { method: 'POST', body: form, signal: controller.signal });
      await new Promise((r) => setTimeout(r, 250));
      controller.abort();
      await expect(request).rejects.toThrow();
      expect(await settle(deadline.url)).toBe(0);
      expect(tesseractChildren()).toEqual([]);
    } finally {
      await deadline.close();
    }
  }, 60_000);

  it('asks for a bearer token when AUTH_TOKENS_FILE is set, probes stay open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ocr-auth-'));
    writeFileSync(join(dir, 'tokens'), 'secret-token\n');
    const authed = await startOcr({ AUTH_TOKENS_FILE: join(dir, 'tokens') });
    try {
      expect((await ocr(authed.url, enPage)).status).toBe(401);
      const form = new FormData();
      form.append('file', new Blob([enPage]), 'en.png');
      const ok = await fetch(`${authed.url}/ocr`, {
        method: 'POST',
        body: form,
        headers: { authorization: 'Bearer secret-token' },
      });
      expect(ok.status).toBe(200);
      expect((await fetch(`${authed.url}/metrics`)).status).toBe(200);
    } finally {
      await authed.close();
    }
  }, 30_000);
});
