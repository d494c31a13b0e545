import { describe, expect, it } from '@jest/globals';
import { aggregate, characters, editDistance, scoreUtterance, stripDiacritics, words } from './scorer.js';

// The WER/CER scorer of the speech benchmark (test/bench/stt/wer.js), on examples computed by hand.

describe('normalisation', () => {
  it('lower-cases, removes punctuation, keeps apostrophes inside words and numbers as written', () => {
    expect(words('Hello, World! It\'s 19 o\'clock -- "fine".')).toEqual([
      'hello',
      'world',
      "it's",
      '19',
      "o'clock",
      'fine',
    ]);
    expect(words("'quoted' cold-hearted")).toEqual(['quoted', 'cold', 'hearted']);
    expect(words('nineteen')).not.toEqual(words('19'));
    expect(words('  \n ')).toEqual([]);
  });

  it('keeps Vietnamese diacritics, and composed and decomposed forms compare equal', () => {
    const text = 'Đến cuối thế kỷ 19, ngành đánh bắt cá được thương mại hóa.';
    expect(words(text)).toEqual([
      'đến',
      'cuối',
      'thế',
      'kỷ',
      '19',
      'ngành',
      'đánh',
      'bắt',
      'cá',
      'được',
      'thương',
      'mại',
      'hóa',
    ]);
    expect(words(text.normalize('NFD'))).toEqual(words(text));
    expect(words('má')).not.toEqual(words('ma'));
  });

  it('strips accents, tone marks and the stroke of đ for the diacritic-free CER', () => {
    expect(stripDiacritics('Đến cuối thế kỷ được hóa')).toBe('Den cuoi the ky duoc hoa');
    expect(words('Đoan ĐẾN', { diacritics: false })).toEqual(['doan', 'den']);
    expect(characters('Má, tôi!')).toEqual(['m', 'á', ' ', 't', 'ô', 'i']);
    expect(characters('Má, tôi!', { diacritics: false })).toEqual(['m', 'a', ' ', 't', 'o', 'i']);
  });
});

describe('Levenshtein distance', () => {
  it('counts substitutions, deletions and insertions', () => {
    // kitten -> sitting: k/s, e/i substituted, g inserted.
    expect(editDistance(Array.from('kitten'), Array.from('sitting'))).toEqual({
      distance: 3,
      substitutions: 2,
      deletions: 0,
      insertions: 1,
    });
    expect(editDistance(['a', 'b'], ['a', 'x', 'b'])).toEqual({
      distance: 1,
      substitutions: 0,
      deletions: 0,
      insertions: 1,
    });
    expect(editDistance(['a', 'b', 'c'], [])).toMatchObject({ distance: 3, deletions: 3 });
    expect(editDistance([], ['a'])).toMatchObject({ distance: 1, insertions: 1 });
    expect(editDistance([], [])).toMatchObject({ distance: 0 });
  });
});

describe('utterance and corpus scores', () => {
  it('scores English words: one substitution and one deletion over six words', () => {
    const s = scoreUtterance('The cat sat on the mat.', 'the cat sit on mat');
    expect(s.words).toEqual({ errors: 2, total: 6, substitutions: 1, deletions: 1, insertions: 0 });
    // "the cat sat on the mat" (22 chars) -> "the cat sit on mat": a/i, and "the " deleted (4).
    expect(s.chars).toEqual({ errors: 5, total: 22 });
  });

  it('a tone error is a whole word in WER, one character in CER and nothing without diacritics', () => {
    const s = scoreUtterance('Má tôi', 'ma tôi');
    expect(s.words).toMatchObject({ errors: 1, total: 2 });
    expect(s.chars).toEqual({ errors: 1, total: 6 });
    expect(s.charsNoDiacritics).toEqual({ errors: 0, total: 6 });
  });

  it('a missed word boundary costs two words but one character', () => {
    const s = scoreUtterance('cold hearted', 'coldhearted');
    expect(s.words).toMatchObject({ errors: 2, total: 2, substitutions: 1, deletions: 1 });
    expect(s.chars).toEqual({ errors: 1, total: 12 });
  });

  it('aggregates errors over summed reference length, not a mean of rates', () => {
    const a = scoreUtterance('the cat sat on the mat', 'the cat sit on mat'); // 2 / 6
    const b = scoreUtterance('go home', 'go home'); // 0 / 2
    const total = aggregate([a, b]);
    expect(total).toMatchObject({ utterances: 2, wordErrors: 2, referenceWords: 8, wer: 0.25 });
    expect(total.cer).toBeCloseTo(5 / (22 + 7), 10);
    // Empty output scores 1 per reference word; an insertion can take WER past 1.
    expect(aggregate([scoreUtterance('one two', '')]).wer).toBe(1);
    expect(aggregate([scoreUtterance('one', 'one two three')]).wer).toBe(2);
    expect(aggregate([])).toMatchObject({ utterances: 0, wer: 0, cer: 0 });
  });
});
