import { BadGatewayError } from '../errors.js';

/**
 * The one reader of `text/event-stream` bodies in the suite (the LLM clients' streamed
 * completions), following the WHATWG event-stream parsing rules: UTF-8 with a leading BOM
 * dropped; lines end with CRLF, LF or CR (also when a CRLF is split between two chunks); a line
 * starting with `:` is a comment; `field: value` loses one space after the colon and a line
 * without a colon is a field with an empty value; `data` lines of one event are joined with LF;
 * `event` names it (`message` when absent); `id` sets the last event id, which every later event
 * carries, unless it holds a NUL; a blank line dispatches the event, and one without data is
 * dropped. Unknown fields and `retry` are ignored (nothing here reconnects).
 */

export interface SseEvent {
  /** The event type: the `event` field, `message` when it had none. */
  readonly event: string;
  /** The `data` lines joined with LF. */
  readonly data: string;
  /** The last event id seen so far in the stream (empty when none). */
  readonly id: string;
}

export interface SseParseOptions {
  /**
   * Dispatch the event that was still open when the body ended (complete lines without the blank
   * line after them). The rules drop it, and so does the default; a client of a server that may
   * close right after its last `data:` line sets this. A last line without its line ending is
   * dropped either way: it may have been cut off.
   */
  readonly dispatchAtEnd?: boolean;
  /** Longest event (its data and the line being read), in characters; longer fails with a 502. */
  readonly maxEventChars?: number;
}

export const DEFAULT_MAX_EVENT_CHARS = 16 * 1024 * 1024;

export async function* parseEventStream(
  body: AsyncIterable<Uint8Array | string>,
  options: SseParseOptions = {},
): AsyncGenerator<SseEvent, void, undefined> {
  const maxChars = options.maxEventChars ?? DEFAULT_MAX_EVENT_CHARS;
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let first = true;
  // A CR ended the previous chunk: an LF opening the next one belongs to it.
  let skipLf = false;
  let data = '';
  let hasData = false;
  let type = '';
  let lastId = '';

  const dispatch = (): SseEvent | undefined => {
    if (!hasData) {
      type = '';
      return undefined;
    }
    const event = { event: type === '' ? 'message' : type, data, id: lastId };
    data = '';
    hasData = false;
    type = '';
    return event;
  };

  const field = (line: string): void => {
    if (line.charCodeAt(0) === 0x3a) return; // `:` comment
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    switch (name) {
      case 'data':
        data = hasData ? `${data}\n${value}` : value;
        hasData = true;
        break;
      case 'event':
        type = value;
        break;
      case 'id':
        if (!value.includes('\0')) lastId = value;
        break;
      default:
      // `retry` and unknown fields: ignored
    }
  };

  for await (const chunk of body) {
    let text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (text === '') continue;
    if (first) {
      // TextDecoder drops a BOM of bytes; string chunks may still hold one.
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    if (skipLf && text.charCodeAt(0) === 0x0a) text = text.slice(1);
    skipLf = false;
    buffer += text;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      const line = buffer.slice(start, i);
      if (c === 0x0d) {
        if (i + 1 === buffer.length) skipLf = true;
        else if (buffer.charCodeAt(i + 1) === 0x0a) i++;
      }
      start = i + 1;
      if (line === '') {
        const event = dispatch();
        if (event !== undefined) yield event;
      } else {
        field(line);
        if (data.length > maxChars) throw tooLong(maxChars);
      }
    }
    buffer = buffer.slice(start);
    if (buffer.length + data.length > maxChars) throw tooLong(maxChars);
  }
  // The decoder's last bytes (a cut-off character) and a last unterminated line are dropped.
  if (options.dispatchAtEnd === true) {
    const event = dispatch();
    if (event !== undefined) yield event;
  }
}

function tooLong(max: number): BadGatewayError {
  return new BadGatewayError(`The upstream sent a server-sent event longer than ${max} characters`);
}
