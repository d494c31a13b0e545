/**
 * The text of one reply as it is generated, cut at the first stop sequence. Text is released only
 * when it can no longer turn out to be the start of a stop sequence (so a streamed reply never
 * shows part of one), and, when `trimTrailingWhitespace` is set, only when something other than
 * whitespace follows it (JSON grammars end in whitespace that is not part of the reply).
 */
export class StopText {
  private text = '';
  private released = 0;
  private stopped = false;
  private readonly longestStop: number;

  constructor(
    private readonly stops: readonly string[],
    private readonly trimTrailingWhitespace = false,
  ) {
    this.longestStop = stops.reduce((max, stop) => Math.max(max, stop.length), 0);
  }

  /** True once a stop sequence was seen: nothing more is taken. */
  get hasStopped(): boolean {
    return this.stopped;
  }

  /** The reply so far as it will be returned (stop sequence cut, held-back text included). */
  get reply(): string {
    return this.trimTrailingWhitespace ? this.text.trimEnd() : this.text;
  }

  /**
   * Takes the next piece of text and returns what can be released now. After a stop sequence
   * appears, the text before it is released and `hasStopped` turns true.
   */
  push(piece: string): string {
    if (this.stopped || piece === '') return '';
    this.text += piece;
    // A stop cannot start before `released`: text that could begin one is always held back.
    let at = -1;
    for (const stop of this.stops) {
      if (stop === '') continue;
      const found = this.text.indexOf(stop, this.released);
      if (found !== -1 && (at === -1 || found < at)) at = found;
    }
    if (at !== -1) {
      this.text = this.text.slice(0, at);
      this.stopped = true;
      return this.release(this.reply.length);
    }
    return this.release(this.text.length - this.heldBack());
  }

  /** At the end of generation: everything still held back that belongs to the reply. */
  end(): string {
    return this.release(this.reply.length);
  }

  private heldBack(): number {
    let held = 0;
    const available = this.text.length - this.released;
    for (let k = Math.min(this.longestStop - 1, available); k > 0; k--) {
      const tail = this.text.slice(this.text.length - k);
      if (this.stops.some((stop) => stop.startsWith(tail))) {
        held = k;
        break;
      }
    }
    if (this.trimTrailingWhitespace) {
      const trimmed = this.text.trimEnd().length;
      held = Math.max(held, this.text.length - Math.max(trimmed, this.released));
    }
    return held;
  }

  private release(upTo: number): string {
    if (upTo <= this.released) return '';
    const out = this.text.slice(this.released, upTo);
    this.released = upTo;
    return out;
  }
}
