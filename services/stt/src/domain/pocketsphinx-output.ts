import type { Segment } from './types.js';

/**
 * Parses what `pocketsphinx_continuous -time yes` prints on stdout: for each utterance its
 * voice-activity detector found, a line with the hypothesis, then one line per word
 * `<word> <start s> <end s> <posterior>`, times from the start of the audio. Fillers (`<s>`,
 * `<sil>`, `[NOISE]`, `++BREATH++` ...) are dropped and alternate pronunciations (`the(2)`) named
 * by their word; each utterance becomes a segment timed by its first and last word.
 */

const WORD_LINE = /^(\S+) (-?\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)$/i;

interface Word {
  readonly word: string;
  readonly start: number;
  readonly end: number;
  readonly confidence: number;
}

export function isFiller(token: string): boolean {
  return /^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(token);
}

/** `the(2)` → `the`. */
export function baseWord(token: string): string {
  return token.replace(/\(\d+\)$/, '');
}

export function parsePocketsphinxOutput(stdout: string): Segment[] {
  const utterances: Word[][] = [];
  let current: Word[] | undefined;
  for (const raw of stdout.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const m = WORD_LINE.exec(line);
    if (m !== null && current !== undefined) {
      const [, token = '', start = '0', end = '0', confidence = '0'] = m;
      if (!isFiller(token)) {
        current.push({
          word: baseWord(token),
          start: Number(start),
          end: Number(end),
          confidence: Number(confidence),
        });
      }
      continue;
    }
    // A hypothesis line opens the next utterance (its words follow, with their times).
    current = [];
    utterances.push(current);
  }
  return utterances.flatMap((words) => {
    const first = words[0];
    const last = words[words.length - 1];
    if (first === undefined || last === undefined) return [];
    const mean = words.reduce((sum, w) => sum + clamp01(w.confidence), 0) / words.length;
    return [
      {
        start: round3(first.start),
        end: round3(last.end),
        text: words.map((w) => w.word).join(' '),
        confidence: round3(mean),
      },
    ];
  });
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
}

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
