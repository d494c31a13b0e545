// Clinical notes rendered to images for the OCR tests and bench: SVG text drawn by sharp's librsvg
// with DejaVu Sans (fonts-dejavu-core, which has every Vietnamese glyph), so the truth is known to
// the character. Also a character accuracy (1 - CER over Unicode code points, NFC, diacritics
// count) and a minimal hand-written PDF (Helvetica text, English only: the standard fonts lack
// Vietnamese). Plain ESM JavaScript so the bench script can use it too.
import sharp from 'sharp';

export const VI_NOTE = [
  'PHIẾU KHÁM BỆNH',
  'Họ và tên: Nguyễn Thị Hồng, 58 tuổi',
  'Lý do khám: đau ngực trái, khó thở khi gắng sức',
  'Tiền sử: tăng huyết áp 10 năm, đái tháo đường típ 2',
  'Mạch 96 lần/phút, huyết áp 150/95 mmHg',
  'Chẩn đoán: theo dõi hội chứng vành cấp',
  'Chỉ định: điện tâm đồ, men tim, siêu âm tim',
  'Thuốc: Aspirin 81 mg uống mỗi ngày một viên',
];

export const EN_NOTE = [
  'CLINICAL NOTE',
  'Patient: John Miller, 64 years old, male',
  'Complaint: productive cough and fever for 5 days',
  'History: COPD, smoker of 40 pack-years',
  'Temperature 38.6 C, respiratory rate 24 per minute',
  'Assessment: community-acquired pneumonia',
  'Plan: chest X-ray, sputum culture, amoxicillin',
  'Follow up in 48 hours or sooner if worse',
];

const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A white page with `lines` in black DejaVu Sans, as PNG. */
export async function renderNote(lines, { width = 1700, fontSize = 34 } = {}) {
  const lineHeight = Math.round(fontSize * 1.8);
  const height = 240 + lines.length * lineHeight;
  const text = lines
    .map(
      (l, i) =>
        `<text x="100" y="${150 + i * lineHeight}" font-family="DejaVu Sans" font-size="${fontSize}" fill="#111">${escape(l)}</text>`,
    )
    .join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#fff"/>${text}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

function levenshtein(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

const normalize = (s) => Array.from(s.normalize('NFC').replace(/\s+/g, ' ').trim());

/** 1 - character error rate of `got` against `truth` (whitespace runs count as one space). */
export function characterAccuracy(truth, got) {
  const t = normalize(truth);
  return 1 - levenshtein(t, normalize(got)) / t.length;
}

/** A PDF whose pages hold `pages[i]` lines of Helvetica text (US Letter). */
export function textPdf(pages) {
  const objects = [];
  const pageIds = pages.map((_, i) => 4 + i * 2);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  pages.forEach((lines, i) => {
    const content = lines
      .map((l, j) => `BT /F1 16 Tf 72 ${720 - j * 28} Td (${l.replace(/[()\\]/g, (c) => `\\${c}`)}) Tj ET`)
      .join('\n');
    objects[4 + i * 2] =
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`;
    objects[5 + i * 2] = stream('', content);
  });
  return writePdf(objects);
}

/**
 * A PDF of `pages` blank pages with the given MediaBox, and CropBox / Rotate when given (boxes in
 * points, `[x0, y0, x1, y1]`): the render bombs of the OCR tests, a few hundred bytes each.
 */
export function boxedPdf(pages, { media, crop, rotate }) {
  const objects = [];
  const pageIds = Array.from({ length: pages }, (_, i) => 4 + i);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages} >>`;
  objects[3] = stream('', '');
  const extra =
    (crop ? ` /CropBox [${crop.join(' ')}]` : '') + (rotate === undefined ? '' : ` /Rotate ${rotate}`);
  for (const id of pageIds) {
    objects[id] = `<< /Type /Page /Parent 2 0 R /MediaBox [${media.join(' ')}]${extra} /Contents 3 0 R >>`;
  }
  return writePdf(objects);
}

/**
 * A one-page PDF (100 x 100 pt) whose content draws a form that draws the next form twice, `depth`
 * forms deep: 2^depth fills from a few kilobytes, a renderer's CPU bomb.
 */
export function nestedFormsPdf(depth) {
  const objects = [];
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = '<< /Type /Pages /Kids [3 0 R] /Count 1 >>';
  objects[3] =
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Resources << /XObject << /X 5 0 R >> >> /Contents 4 0 R >>';
  objects[4] = stream('', '/X Do');
  for (let i = 0; i < depth; i++) {
    const last = i === depth - 1;
    const resources = last ? '' : ` /Resources << /XObject << /X ${6 + i} 0 R >> >>`;
    objects[5 + i] = stream(
      `/Type /XObject /Subtype /Form /BBox [0 0 100 100]${resources}`,
      last ? '0 0 1 1 re f' : '/X Do /X Do',
    );
  }
  return writePdf(objects);
}

function stream(dict, content) {
  return `<< ${dict} /Length ${Buffer.byteLength(content)} >>\nstream\n${content}\nendstream`;
}

/** `objects[1..]` as a PDF file with its cross-reference table. */
function writePdf(objects) {
  let out = '%PDF-1.4\n';
  const offsets = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = Buffer.byteLength(out);
    out += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) out += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
