// Word and character error rates for the speech-to-text benchmark (test/bench/stt/wer.js), plain
// ESM JavaScript run without a build; types in scorer.d.ts, tests in scorer.test.ts.
//
// Normalisation (the same for reference and hypothesis), described in services/stt/README.md
// ("Accuracy"):
// 1. Unicode NFC, so a precomposed "ệ" and "e" + combining marks compare equal;
// 2. lower case;
// 3. every character that is not a letter, a combining mark, a digit or an apostrophe inside a word
//    becomes a space (punctuation removed; "cold-hearted" gives two words, "don't" stays one);
// 4. numbers stay as written: "19" and "nineteen" are different words;
// 5. split on white space.
// WER and CER keep Vietnamese diacritics (they carry the tone and the vowel: "ma", "má", "mà"
// are different words). CER without diacritics also strips the marks (NFD, combining marks removed,
// "đ" read as "d") to show how much of the error is tone and vowel marks alone.
// CER counts characters of the normalised words joined by one space, so a word boundary the engine
// misses costs one edit.

/** Normalised words of `text`; `{ diacritics: false }` also removes accents and tone marks. */
export function words(text, { diacritics = true } = {}) {
  let t = text.normalize('NFC').toLowerCase();
  t = t.replace(/[^\p{L}\p{M}\p{N}']+/gu, ' ');
  // An apostrophe counts only inside a word ("don't"); quotes around words go.
  t = t.replace(/(^|\s)'+|'+(?=\s|$)/g, '$1');
  if (!diacritics) t = stripDiacritics(t);
  return t.split(/\s+/).filter((w) => w !== '');
}

/** Removes accents and tone marks: NFD, combining marks dropped, "đ" to "d". */
export function stripDiacritics(text) {
  return text
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .replace(/đ/g, 'd')
    .replace(/Đ/g, 'D')
    .normalize('NFC');
}

/** The characters of the normalised text: words joined by one space, as code points. */
export function characters(text, options) {
  return [...words(text, options).join(' ')];
}

/**
 * Levenshtein distance between two sequences (unit cost for a substitution, a deletion and an
 * insertion), with the counts of each kind along one cheapest alignment.
 */
export function editDistance(ref, hyp) {
  const n = ref.length;
  const m = hyp.length;
  // d[i][j]: distance between ref[0..i) and hyp[0..j).
  const d = Array.from({ length: n + 1 }, (_, i) => {
    const row = new Array(m + 1).fill(0);
    row[0] = i;
    return row;
  });
  for (let j = 0; j <= m; j++) d[0][j] = j;
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      const sub = d[i - 1][j - 1] + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      d[i][j] = Math.min(sub, d[i - 1][j] + 1, d[i][j - 1] + 1);
    }
  }
  let substitutions = 0;
  let deletions = 0;
  let insertions = 0;
  let i = n;
  let j = m;
  while (i > 0 || j > 0) {
    if (i > 0 && j > 0 && d[i][j] === d[i - 1][j - 1] + (ref[i - 1] === hyp[j - 1] ? 0 : 1)) {
      if (ref[i - 1] !== hyp[j - 1]) substitutions++;
      i--;
      j--;
    } else if (i > 0 && d[i][j] === d[i - 1][j] + 1) {
      deletions++;
      i--;
    } else {
      insertions++;
      j--;
    }
  }
  return { distance: d[n][m], substitutions, deletions, insertions };
}

/** Errors and reference length of one utterance, for words, characters and diacritic-free characters. */
export function scoreUtterance(reference, hypothesis) {
  const w = editDistance(words(reference), words(hypothesis));
  const c = characters(reference);
  const cn = characters(reference, { diacritics: false });
  return {
    words: { errors: w.distance, total: words(reference).length, ...pick(w) },
    chars: { errors: editDistance(c, characters(hypothesis)).distance, total: c.length },
    charsNoDiacritics: {
      errors: editDistance(cn, characters(hypothesis, { diacritics: false })).distance,
      total: cn.length,
    },
  };
}

function pick({ substitutions, deletions, insertions }) {
  return { substitutions, deletions, insertions };
}

/**
 * Corpus-level rates: errors summed over utterances divided by the summed reference length (not a
 * mean of per-utterance rates, so a short utterance weighs by its length).
 */
export function aggregate(scores) {
  const sum = (key) =>
    scores.reduce((acc, s) => ({ errors: acc.errors + s[key].errors, total: acc.total + s[key].total }), {
      errors: 0,
      total: 0,
    });
  const rate = ({ errors, total }) => (total === 0 ? (errors === 0 ? 0 : 1) : errors / total);
  const w = sum('words');
  const c = sum('chars');
  const cn = sum('charsNoDiacritics');
  return {
    utterances: scores.length,
    wer: rate(w),
    cer: rate(c),
    cerNoDiacritics: rate(cn),
    wordErrors: w.errors,
    referenceWords: w.total,
    charErrors: c.errors,
    referenceChars: c.total,
  };
}
