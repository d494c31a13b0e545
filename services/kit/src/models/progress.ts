/**
 * Download progress: the callback type the store reports through, and a small renderer for a
 * terminal (one bar redrawn with `\r`) or a log (a plain line every ~5 s or 10%).
 */

export interface FetchProgress {
  readonly source: string;
  /** Bytes of the file on disk so far, a resumed prefix included. */
  readonly receivedBytes: number;
  readonly totalBytes?: number;
  /** True once, when the file is complete and verified. */
  readonly done: boolean;
}

export type ProgressCallback = (progress: FetchProgress) => void;

export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

export interface ProgressReporterOptions {
  /** Clock in ms; injectable for tests. */
  readonly now?: () => number;
  /** Least time between plain lines (default 5000 ms). */
  readonly lineIntervalMs?: number;
  /** Least time between bar redraws (default 100 ms). */
  readonly redrawIntervalMs?: number;
}

export interface ProgressReporter {
  readonly onProgress: ProgressCallback;
  /** Ends a bar left mid-line (a failed download), so what follows starts on its own line. */
  finish(): void;
}

const MB = 1_000_000;
const BAR_WIDTH = 24;

export function createProgressReporter(
  stream: ProgressStream,
  options: ProgressReporterOptions = {},
): ProgressReporter {
  const now = options.now ?? Date.now;
  const tty = stream.isTTY === true;
  const minInterval = tty ? (options.redrawIntervalMs ?? 100) : (options.lineIntervalMs ?? 5000);
  let current: { source: string; startMs: number; startBytes: number } | undefined;
  let lastWriteMs = -Infinity;
  let lastDecile = -1;
  let barOpen = false;

  const finish = (): void => {
    if (barOpen) stream.write('\n');
    barOpen = false;
  };

  const onProgress = (p: FetchProgress): void => {
    const t = now();
    if (current?.source !== p.source) {
      finish();
      current = { source: p.source, startMs: t, startBytes: p.receivedBytes };
      lastWriteMs = -Infinity;
      lastDecile = -1;
    }
    const fraction = p.totalBytes ? Math.min(1, p.receivedBytes / p.totalBytes) : undefined;
    const decile = fraction === undefined ? -1 : Math.floor(fraction * 10);
    const due = p.done || t - lastWriteMs >= minInterval || (!tty && decile > lastDecile);
    if (!due) return;
    lastWriteMs = t;
    lastDecile = decile;
    const seconds = (t - current.startMs) / 1000;
    const rate = seconds > 0 ? (p.receivedBytes - current.startBytes) / seconds : undefined;
    if (tty) {
      stream.write(`\r${formatBar(p, fraction, rate)}\x1b[K`);
      barOpen = true;
      if (p.done) finish();
    } else {
      stream.write(`${formatLine(p, fraction, rate, seconds)}\n`);
    }
  };

  return { onProgress, finish };
}

function formatBar(p: FetchProgress, fraction: number | undefined, rate: number | undefined): string {
  const filled = Math.round((fraction ?? 0) * BAR_WIDTH);
  const bar =
    fraction === undefined ? '?'.repeat(BAR_WIDTH) : '#'.repeat(filled) + '-'.repeat(BAR_WIDTH - filled);
  const percent = fraction === undefined ? '  ?%' : `${Math.floor(fraction * 100)}%`.padStart(4);
  return `${shorten(p.source, 40)} [${bar}] ${percent} ${amount(p)}${rate === undefined ? '' : `  ${mb(rate)} MB/s`}`;
}

function formatLine(
  p: FetchProgress,
  fraction: number | undefined,
  rate: number | undefined,
  seconds: number,
): string {
  if (p.done) return `${p.source}: done, ${mb(p.receivedBytes)} MB in ${seconds.toFixed(1)} s`;
  const head = fraction === undefined ? '' : `${Math.floor(fraction * 100)}% `;
  return `${p.source}: ${head}(${amount(p)}${rate === undefined ? '' : `, ${mb(rate)} MB/s`})`;
}

function amount(p: FetchProgress): string {
  return p.totalBytes ? `${mb(p.receivedBytes)}/${mb(p.totalBytes)} MB` : `${mb(p.receivedBytes)} MB`;
}

function mb(bytes: number): string {
  return (bytes / MB).toFixed(1);
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}
