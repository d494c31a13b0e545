/** The services table the runner prints: pure rendering of rows. */

export interface Row {
  readonly name: string;
  readonly url: string;
  readonly state: string;
  readonly pid: number | null;
  readonly restarts: number;
  readonly detail: string;
}

export const TABLE_HEADER = ['NAME', 'URL', 'STATE', 'PID', 'RESTARTS', 'DETAIL'] as const;

function cells(row: Row): string[] {
  return [
    row.name,
    row.url,
    row.state,
    row.pid === null ? '-' : String(row.pid),
    String(row.restarts),
    row.detail,
  ];
}

/** Columns left-aligned, two spaces apart, no trailing spaces; detail is the last column and unpadded. */
export function renderTable(rows: readonly Row[]): string {
  const table = [[...TABLE_HEADER], ...rows.map(cells)];
  const widths = TABLE_HEADER.map((_, col) => Math.max(...table.map((line) => (line[col] ?? '').length)));
  return table
    .map((line) =>
      line
        .map((cell, col) => (col === line.length - 1 ? cell : cell.padEnd(widths[col] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `restarting in 2s (exit code 1)` / `restarting in 500ms (signal SIGKILL)`. */
export function restartingState(
  delayMs: number,
  exit: { code: number | null; signal: string | null },
): string {
  const delay =
    delayMs % 1000 === 0
      ? `${delayMs / 1000}s`
      : delayMs >= 1000
        ? `${(delayMs / 1000).toFixed(1)}s`
        : `${delayMs}ms`;
  return `restarting in ${delay} (${describeExit(exit)})`;
}

export function describeExit(exit: { code: number | null; signal: string | null }): string {
  return exit.signal !== null ? `signal ${exit.signal}` : `exit code ${exit.code ?? '?'}`;
}
