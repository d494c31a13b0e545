/**
 * Piper's phoneme ids (piper-phonemize `phonemes_to_ids`): `^` (BOS), then each phoneme's ids
 * followed by the pad `_`, then `$` (EOS), with a pad after BOS as well. Phonemes are the Unicode
 * code points of espeak-ng's IPA after NFD decomposition; those the voice does not know are
 * skipped and reported. Pure.
 */

export type PhonemeIdMap = Readonly<Record<string, readonly number[]>>;

export const PAD = '_';
export const BOS = '^';
export const EOS = '$';

export interface PhonemeIds {
  readonly ids: number[];
  /** Phonemes missing from the map, each once, in order of appearance. */
  readonly missing: string[];
}

export function phonemesOf(ipa: string): string[] {
  // Code points, not graphemes: Piper maps combining marks (stress, length, tones) on their own.
  return Array.from(ipa.normalize('NFD'));
}

export function phonemeIds(phonemes: readonly string[], map: PhonemeIdMap): PhonemeIds {
  const id = (symbol: string): readonly number[] => {
    const found = map[symbol];
    if (found === undefined) throw new Error(`the voice's phoneme_id_map lacks "${symbol}"`);
    return found;
  };
  const pad = id(PAD);
  const ids: number[] = [...id(BOS), ...pad];
  const missing = new Set<string>();
  for (const p of phonemes) {
    const found = map[p];
    if (found === undefined) {
      missing.add(p);
      continue;
    }
    ids.push(...found, ...pad);
  }
  ids.push(...id(EOS));
  return { ids, missing: [...missing] };
}

/**
 * One sentence's phoneme string from espeak-ng's clause lines, as Piper builds it: clauses joined
 * with their punctuation (`, `) and the sentence's terminator at the end. When espeak-ng split the
 * sentence into a different number of clauses than the punctuation says, the clauses are joined
 * with spaces instead (nothing is invented).
 */
export function sentencePhonemes(
  clauseLines: readonly string[],
  breaks: readonly string[],
  terminator: string,
): string {
  const lines = clauseLines.map((l) => l.trim()).filter((l) => l !== '');
  const aligned = lines.length === breaks.length + 1;
  const joined = lines.map((l, i) => (aligned && i < breaks.length ? `${l}${breaks[i] ?? ''} ` : `${l} `));
  return `${joined.join('').trim()}${terminator}`;
}
