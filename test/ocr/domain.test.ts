import { describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { clamp, mapBoxToSource, rotatedSize } from '../../services/ocr/src/domain/geometry.js';
import { parseOsd } from '../../services/ocr/src/domain/osd.js';
import { betterRead, needsOrientationCheck } from '../../services/ocr/src/domain/page.js';
import { estimateSkew, otsuThreshold } from '../../services/ocr/src/domain/skew.js';
import { meanConfidence, parseTsv } from '../../services/ocr/src/domain/tsv.js';
import { pageRange } from '../../services/ocr/src/routes/ocr.js';
import { EN_NOTE, characterAccuracy, renderNote } from './pages.js';

// The pipeline's pure parts: tesseract's outputs, box geometry, the skew estimate, page ranges.

const TSV = [
  'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext',
  '1\t1\t0\t0\t0\t0\t0\t0\t1700\t728\t-1\t',
  '4\t1\t1\t1\t1\t0\t103\t115\t314\t41\t-1\t',
  '5\t1\t1\t1\t1\t1\t103\t115\t97\t35\t90\tPHIẾU',
  '5\t1\t1\t1\t1\t2\t217\t118\t93\t32\t60\tBỆNH',
  '4\t1\t1\t1\t2\t0\t100\t180\t600\t40\t-1\t',
  '5\t1\t1\t1\t2\t1\t100\t180\t50\t40\t95.5\t  ',
  '4\t1\t1\t1\t3\t0\t100\t240\t600\t40\t-1\t',
  '5\t1\t1\t1\t3\t1\t100\t240\t50\t40\t80\tok',
].join('\n');

describe('tesseract output', () => {
  it('groups words into lines with character-weighted confidence 0..1, dropping empty lines', () => {
    const lines = parseTsv(TSV);
    expect(lines.map((l) => l.text)).toEqual(['PHIẾU BỆNH', 'ok']);
    // (90 * 5 + 60 * 4) / 9 = 76.67
    expect(lines[0]!.confidence).toBeCloseTo(0.7667, 4);
    expect(lines[0]!.box).toEqual({ x: 103, y: 115, width: 314, height: 41 });
    expect(meanConfidence(lines)).toBeCloseTo((0.7667 * 9 + 0.8 * 2) / 11, 3);
    expect(meanConfidence([])).toBeNull();
  });

  it('reads OSD output and treats "too few characters" as unknown', () => {
    expect(
      parseOsd('Page number: 0\nOrientation in degrees: 90\nRotate: 270\nOrientation confidence: 13.19\n'),
    ).toEqual({ rotate: 270, confidence: 13.19 });
    expect(parseOsd('Too few characters. Skipping this page\n')).toBeNull();
  });
});

describe('geometry', () => {
  it('maps a box on a page turned 90° clockwise back to the page as uploaded', () => {
    // A 200x100 page turned 90° is 100x200; its top-left 10x20 box was the bottom-left of the original.
    const box = mapBoxToSource({ x: 0, y: 0, width: 10, height: 20 }, [
      { degrees: 90, inWidth: 200, inHeight: 100, outWidth: 100, outHeight: 200 },
    ]);
    expect(box).toEqual({ x: 0, y: 90, width: 20, height: 10 });
  });

  it('undoes a small rotation to within a pixel and keeps boxes inside the page', () => {
    const size = rotatedSize(1000, 500, 4);
    const back = mapBoxToSource({ x: size.width / 2 - 5, y: size.height / 2 - 5, width: 10, height: 10 }, [
      { degrees: 4, inWidth: 1000, inHeight: 500, outWidth: size.width, outHeight: size.height },
    ]);
    expect(Math.abs(back.x + back.width / 2 - 500)).toBeLessThanOrEqual(1);
    expect(Math.abs(back.y + back.height / 2 - 250)).toBeLessThanOrEqual(1);
    expect(clamp({ x: -5, y: 490, width: 30, height: 30 }, 1000, 500)).toEqual({
      x: 0,
      y: 490,
      width: 25,
      height: 10,
    });
  });
});

async function gray(png: Buffer) {
  const { data, info } = await sharp(png).greyscale().raw().toBuffer({ resolveWithObject: true });
  const out = new Uint8Array(info.width * info.height);
  for (let i = 0; i < out.length; i++) out[i] = data[i * info.channels]!;
  return { width: info.width, height: info.height, data: out };
}

describe('skew estimate (projection profile)', () => {
  it('finds 0 on a straight page and the angle of pages turned by -5..5 degrees within 0.25', async () => {
    const page = await renderNote(EN_NOTE, { width: 1000, fontSize: 20 });
    const straight = estimateSkew(await gray(page));
    expect(Math.abs(straight.degrees)).toBeLessThanOrEqual(0.1);
    for (const angle of [-5, -3, 1.5, 4]) {
      const turned = await sharp(page).rotate(angle, { background: '#fff' }).png().toBuffer();
      const estimate = estimateSkew(await gray(turned));
      expect(Math.abs(estimate.degrees - angle)).toBeLessThanOrEqual(0.25);
      expect(estimate.strength).toBeGreaterThan(1.05);
    }
  });

  it("splits ink from paper with Otsu's threshold, and reports nothing on a blank page", async () => {
    const page = await gray(await renderNote(['x'], { width: 200 }));
    const t = otsuThreshold(page);
    expect(t).toBeGreaterThan(17);
    expect(t).toBeLessThan(255);
    const blank = { width: 100, height: 100, data: new Uint8Array(10_000).fill(255) };
    expect(estimateSkew(blank)).toMatchObject({ degrees: 0, strength: 1 });
  });
});

describe('page decisions', () => {
  const line = (confidence: number, width: number, height: number) => ({
    text: 'x',
    confidence,
    chars: 10,
    box: { x: 0, y: 0, width, height },
  });
  it('checks orientation for low confidence or text running down the page, not for confident or empty reads', () => {
    expect(needsOrientationCheck({ lines: [line(0.95, 600, 40)] })).toBe(false);
    expect(needsOrientationCheck({ lines: [line(0.6, 600, 40)] })).toBe(true);
    expect(needsOrientationCheck({ lines: [line(0.95, 40, 600)] })).toBe(true);
    expect(needsOrientationCheck({ lines: [] })).toBe(false);
  });
  it('keeps the turned read unless the upright one is clearly more confident', () => {
    const upright = { lines: [line(0.95, 40, 600)] };
    const turned = { lines: [line(0.94, 600, 40)] };
    expect(betterRead(upright, turned)).toBe(turned);
    expect(
      betterRead({ lines: [line(0.95, 600, 40)] }, { lines: [line(0.5, 600, 40)] }).lines[0]!.confidence,
    ).toBe(0.95);
  });
});

describe('page ranges', () => {
  const form = (first?: number, last?: number) =>
    ({ language: 'vi+en', auto_rotate: true, deskew: true, first_page: first, last_page: last }) as never;
  it('reads every page within the limit, a range when asked, and refuses what is out of bounds', () => {
    expect(pageRange(3, form(), 10)).toEqual({ first: 1, last: 3 });
    expect(pageRange(30, form(11, 20), 10)).toEqual({ first: 11, last: 20 });
    expect(() => pageRange(30, form(), 10)).toThrow(/30 pages; at most 10/);
    expect(() => pageRange(1, form(2), 10)).toThrow(/first_page: the document has 1 page/);
    expect(() => pageRange(5, form(3, 2), 10)).toThrow(/last_page: must be >= first_page/);
    expect(() => pageRange(5, form(1, 9), 10)).toThrow(/last_page: the document has 5 pages/);
  });
});

describe('character accuracy', () => {
  it('counts a lost diacritic as an error and whitespace runs as one space', () => {
    expect(characterAccuracy('Nguyễn Thị', 'Nguyễn   Thị')).toBe(1);
    expect(characterAccuracy('Nguyễn Thị', 'Nguyen Thi')).toBeCloseTo(0.8, 5);
    // NFD input (e + combining marks) reads as the NFC text.
    expect(characterAccuracy('ệ', 'e\u0323\u0302')).toBe(1);
  });
});
