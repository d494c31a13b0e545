import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BadRequestError, ServiceUnavailableError, type ProcessRunner } from '@clinicalsuite/kit';
import { ProcessFailedError } from './process.js';

/**
 * PDF pages through poppler-utils: pdfinfo for the page count and sizes, pdftoppm to render one
 * page at a time to grey PNG. poppler reads files, so the PDF is written to a private temporary
 * directory (0700) that is removed when the request ends, whatever happens.
 *
 * The size pdfinfo reports is the page's CropBox (after its /Rotate), so that is what pdftoppm
 * renders (`-cropbox`; its default, the MediaBox, can be thousands of times larger), and pdftoppm
 * itself is held to the pixels checked (`-x 0 -y 0 -W <width> -H <height>`: its bitmap is never
 * larger, whatever the file says), under the runner's memory and CPU limits.
 */

export interface PdfTools {
  readonly pdfinfo: string;
  readonly pdftoppm: string;
  readonly timeoutMs: number;
}

export interface PdfPageSize {
  readonly page: number;
  /** Points (1/72 inch), after the page's own rotation. */
  readonly widthPt: number;
  readonly heightPt: number;
}

/** The pixels a page is rendered to at `dpi` (what pdftoppm makes of the same size). */
export function renderedSize(size: PdfPageSize, dpi: number): { width: number; height: number } {
  return { width: Math.ceil((size.widthPt * dpi) / 72), height: Math.ceil((size.heightPt * dpi) / 72) };
}

export class PdfDocument {
  private constructor(
    private readonly runner: ProcessRunner,
    private readonly tools: PdfTools,
    private readonly dir: string,
    readonly pages: number,
  ) {}

  private get path(): string {
    return join(this.dir, 'input.pdf');
  }

  static async open(
    runner: ProcessRunner,
    tools: PdfTools,
    bytes: Buffer,
    signal: AbortSignal,
  ): Promise<PdfDocument> {
    const dir = await mkdtemp(join(tmpdir(), 'ocr-pdf-'));
    try {
      await writeFile(join(dir, 'input.pdf'), bytes, { mode: 0o600 });
      const info = await pdfinfo(runner, tools, join(dir, 'input.pdf'), [], signal);
      const pages = Number(/^Pages:\s*(\d+)/m.exec(info)?.[1] ?? NaN);
      if (!Number.isInteger(pages) || pages < 1) {
        throw new BadRequestError('The PDF has no pages', { code: 'invalid_pdf', param: 'file' });
      }
      return new PdfDocument(runner, tools, dir, pages);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Sizes of pages `first`..`last` (1-based). */
  async sizes(first: number, last: number, signal: AbortSignal): Promise<PdfPageSize[]> {
    const text = await pdfinfo(
      this.runner,
      this.tools,
      this.path,
      ['-f', String(first), '-l', String(last)],
      signal,
    );
    const sizes = new Map<number, { w: number; h: number }>();
    const rotations = new Map<number, number>();
    // pdfinfo prints sizes with %g: a page of a million points is `1e+06`.
    for (const m of text.matchAll(
      /^Page\s+(\d+)\s+size:\s*([\d.]+(?:e[+-]?\d+)?)\s*x\s*([\d.]+(?:e[+-]?\d+)?)/gm,
    )) {
      sizes.set(Number(m[1]), { w: Number(m[2]), h: Number(m[3]) });
    }
    for (const m of text.matchAll(/^Page\s+(\d+)\s+rot:\s*(\d+)/gm))
      rotations.set(Number(m[1]), Number(m[2]));
    const out: PdfPageSize[] = [];
    for (let page = first; page <= last; page++) {
      const size = sizes.get(page) ?? { w: 612, h: 792 };
      const sideways = (rotations.get(page) ?? 0) % 180 === 90;
      out.push({ page, widthPt: sideways ? size.h : size.w, heightPt: sideways ? size.w : size.h });
    }
    return out;
  }

  /**
   * One page's CropBox rendered in grey at `dpi`, as PNG, at most `box` pixels (the size checked
   * from `sizes()`: pdftoppm renders no more, even if it sees the page differently).
   */
  async render(
    page: number,
    dpi: number,
    box: { readonly width: number; readonly height: number },
    signal: AbortSignal,
  ): Promise<Buffer> {
    const out = join(this.dir, `page-${String(page)}`);
    try {
      await this.runner.output(
        this.tools.pdftoppm,
        [
          '-f',
          String(page),
          '-l',
          String(page),
          '-cropbox',
          '-r',
          String(dpi),
          '-x',
          '0',
          '-y',
          '0',
          '-W',
          String(box.width),
          '-H',
          String(box.height),
          '-gray',
          '-png',
          '-singlefile',
          this.path,
          out,
        ],
        { timeoutMs: this.tools.timeoutMs, signal },
      );
    } catch (error) {
      throw translate(error, this.tools.pdftoppm);
    }
    const png = await readFile(`${out}.png`);
    await rm(`${out}.png`, { force: true });
    return png;
  }

  async close(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

async function pdfinfo(
  runner: ProcessRunner,
  tools: PdfTools,
  path: string,
  args: string[],
  signal: AbortSignal,
): Promise<string> {
  try {
    return (
      await runner.output(tools.pdfinfo, [...args, path], { timeoutMs: tools.timeoutMs, signal })
    ).toString();
  } catch (error) {
    throw translate(error, tools.pdfinfo);
  }
}

function translate(error: unknown, binary: string): unknown {
  if (error instanceof ServiceUnavailableError) {
    return new ServiceUnavailableError(
      `PDF support is not available: poppler-utils is not installed (${binary} not found); install poppler-utils or send images`,
    );
  }
  if (error instanceof ProcessFailedError) {
    const encrypted = /password|encrypt/i.test(error.stderr);
    return new BadRequestError(
      encrypted
        ? 'The PDF is encrypted: send it without a password'
        : 'The PDF could not be read (damaged or not a PDF)',
      { code: encrypted ? 'encrypted_pdf' : 'invalid_pdf', param: 'file', cause: error },
    );
  }
  return error;
}
