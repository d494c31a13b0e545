/**
 * RFC 4180 CSV, as spreadsheets write it: `,` between fields, `"` around a field holding `,`, `"`
 * or a line break, `""` for a quote inside one; LF or CRLF; a UTF-8 BOM ignored; blank lines
 * skipped (curators leave them). Each record keeps the line it starts on, so problems can name it.
 */

export interface CsvRecord {
  /** 1-based line on which the record starts. */
  readonly line: number;
  readonly cells: readonly string[];
}

export interface CsvParseResult {
  readonly records: readonly CsvRecord[];
  /** Malformed quoting, with the line it was found on. */
  readonly errors: readonly { readonly line: number; readonly message: string }[];
}

export function parseCsv(text: string): CsvParseResult {
  const records: CsvRecord[] = [];
  const errors: { line: number; message: string }[] = [];
  const src = text.startsWith('\uFEFF') ? text.slice(1) : text;
  let line = 1;
  let i = 0;
  while (i < src.length) {
    const start = line;
    const cells: string[] = [];
    let cell = '';
    let quotedCell = false;
    let endOfRecord = false;
    while (!endOfRecord) {
      if (i >= src.length) {
        cells.push(cell);
        break;
      }
      const ch = src.charAt(i);
      if (ch === '"' && cell === '' && !quotedCell) {
        // A quoted field: up to the closing quote, "" standing for one quote.
        quotedCell = true;
        i++;
        let closed = false;
        while (i < src.length) {
          const q = src.charAt(i);
          if (q === '"') {
            if (src[i + 1] === '"') {
              cell += '"';
              i += 2;
              continue;
            }
            i++;
            closed = true;
            break;
          }
          if (q === '\n') line++;
          cell += q;
          i++;
        }
        if (!closed) errors.push({ line: start, message: 'a quoted field is never closed' });
        const next = src[i];
        if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
          errors.push({ line, message: 'text after the closing quote of a field' });
          while (i < src.length && src[i] !== ',' && src[i] !== '\n' && src[i] !== '\r') i++;
        }
        continue;
      }
      if (ch === ',') {
        cells.push(cell);
        cell = '';
        quotedCell = false;
        i++;
      } else if (ch === '\n' || ch === '\r') {
        cells.push(cell);
        i += ch === '\r' && src[i + 1] === '\n' ? 2 : 1;
        line++;
        endOfRecord = true;
      } else {
        if (ch === '"') errors.push({ line, message: 'a quote inside an unquoted field (quote the field)' });
        cell += ch;
        i++;
      }
    }
    const blank = cells.length === 1 && cells[0] === '' && !quotedCell;
    if (!blank) records.push({ line: start, cells });
  }
  return { records, errors };
}

function quote(cell: string): string {
  return /[",\r\n]|^\s|\s$/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}

/** One line per record, LF endings, a final newline; fields quoted only where they must be. */
export function writeCsv(rows: readonly (readonly string[])[]): string {
  return rows.map((cells) => cells.map(quote).join(',')).join('\n') + '\n';
}
