/**
 * tesseract's TSV output (`tsv` config) into lines: one row per page, block, paragraph, line and
 * word (`level` 1-5), each with its box; words carry a confidence of 0-100 (-1 on the other levels).
 */

export interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export interface RecognizedLine {
  readonly text: string;
  /** Mean word confidence weighted by characters, 0..1. */
  readonly confidence: number;
  readonly box: Box;
  /** Characters of the words (without spaces), the weight of this line in a page's mean. */
  readonly chars: number;
}

const LINE = 4;
const WORD = 5;

export function parseTsv(tsv: string): RecognizedLine[] {
  const lines = new Map<string, { box: Box; words: { text: string; conf: number }[] }>();
  const order: string[] = [];
  for (const row of tsv.split('\n')) {
    const cols = row.split('\t');
    if (cols.length < 12) continue;
    const level = Number(cols[0]);
    if (level !== LINE && level !== WORD) continue;
    const key = `${cols[2] ?? ''}.${cols[3] ?? ''}.${cols[4] ?? ''}`;
    if (level === LINE) {
      const box = {
        x: Number(cols[6]),
        y: Number(cols[7]),
        width: Number(cols[8]),
        height: Number(cols[9]),
      };
      if (!Object.values(box).every(Number.isFinite)) continue;
      lines.set(key, { box, words: [] });
      order.push(key);
      continue;
    }
    const text = cols.slice(11).join('\t').trim();
    const conf = Number(cols[10]);
    if (text === '' || !Number.isFinite(conf) || conf < 0) continue;
    lines.get(key)?.words.push({ text, conf });
  }
  const out: RecognizedLine[] = [];
  for (const key of order) {
    const line = lines.get(key);
    if (line === undefined || line.words.length === 0) continue;
    const chars = line.words.reduce((n, w) => n + charCount(w.text), 0);
    const weighted = line.words.reduce((n, w) => n + w.conf * charCount(w.text), 0);
    out.push({
      text: line.words
        .map((w) => w.text)
        .join(' ')
        .normalize('NFC'),
      confidence: round4(Math.min(100, Math.max(0, weighted / chars)) / 100),
      box: line.box,
      chars,
    });
  }
  return out;
}

/** Mean confidence of lines weighted by their characters; null without any. */
export function meanConfidence(lines: readonly { confidence: number; chars: number }[]): number | null {
  const chars = lines.reduce((n, l) => n + l.chars, 0);
  if (chars === 0) return null;
  return round4(lines.reduce((n, l) => n + l.confidence * l.chars, 0) / chars);
}

/** Characters as a reader counts them: code points of the NFC form (ệ is one). */
function charCount(text: string): number {
  return Array.from(text.normalize('NFC')).length;
}

export function round4(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
