/**
 * The rule pass's term lists for symptoms, signs and past conditions, so findings come out of the
 * text even without an LLM (or when it fails). Names are normalised English, lower case; the
 * knowledge base's synonyms can be added with `lexiconFromFeatures`. Words only: no numbers here.
 */
import type { KbFeature } from '../domain/types.js';
import { isAbbreviation, keepLongest, occurrenceAt, type Span, type TermOccurrence } from './terms.js';
import { foldTerm, hasDiacritics, looksEnglish, type FoldedText } from './text.js';
import type { ExtractedKind, LexiconEntry } from './types.js';

export const BASE_LEXICON: readonly LexiconEntry[] = [
  // Symptoms.
  {
    name: 'fever',
    kind: 'symptom',
    terms: ['sốt', 'sốt cao', 'sốt nhẹ', 'fever', 'fevers', 'febrile', 'pyrexia'],
  },
  { name: 'chills', kind: 'symptom', terms: ['ớn lạnh', 'rét run', 'lạnh run', 'chills', 'rigors'] },
  { name: 'cough', kind: 'symptom', terms: ['ho', 'ho nhiều', 'cough', 'coughing'] },
  { name: 'dry cough', kind: 'symptom', terms: ['ho khan', 'dry cough', 'nonproductive cough'] },
  {
    name: 'productive cough',
    kind: 'symptom',
    terms: [
      'ho đờm',
      'ho có đờm',
      'ho khạc đờm',
      'khạc đờm',
      'đờm xanh',
      'đờm vàng',
      'đờm mủ',
      'productive cough',
      'sputum production',
      'purulent sputum',
      'green sputum',
      'yellow sputum',
    ],
  },
  { name: 'hemoptysis', kind: 'symptom', terms: ['ho ra máu', 'khạc ra máu', 'hemoptysis', 'haemoptysis'] },
  {
    name: 'dyspnea',
    kind: 'symptom',
    terms: [
      'khó thở',
      'hụt hơi',
      'thở dốc',
      'shortness of breath',
      'short of breath',
      'breathlessness',
      'breathless',
      'SOB',
      'dyspnea',
      'dyspnoea',
    ],
  },
  {
    name: 'chest pain',
    kind: 'symptom',
    terms: ['đau ngực', 'tức ngực', 'đau thắt ngực', 'chest pain', 'chest tightness'],
  },
  { name: 'headache', kind: 'symptom', terms: ['đau đầu', 'nhức đầu', 'headache', 'headaches'] },
  { name: 'sore throat', kind: 'symptom', terms: ['đau họng', 'rát họng', 'sore throat'] },
  {
    name: 'runny nose',
    kind: 'symptom',
    terms: ['sổ mũi', 'chảy nước mũi', 'chảy mũi', 'runny nose', 'rhinorrhea', 'rhinorrhoea'],
  },
  {
    name: 'abdominal pain',
    kind: 'symptom',
    terms: ['đau bụng', 'abdominal pain', 'stomach ache', 'stomachache', 'belly pain'],
  },
  { name: 'nausea', kind: 'symptom', terms: ['buồn nôn', 'nausea', 'nauseated', 'nauseous'] },
  {
    name: 'vomiting',
    kind: 'symptom',
    terms: ['nôn', 'nôn ói', 'ói', 'ói mửa', 'vomiting', 'vomited', 'emesis'],
  },
  {
    name: 'diarrhea',
    kind: 'symptom',
    terms: ['tiêu chảy', 'ỉa chảy', 'đi ngoài phân lỏng', 'diarrhea', 'diarrhoea', 'loose stools'],
  },
  {
    name: 'hematemesis',
    kind: 'symptom',
    terms: ['nôn ra máu', 'ói ra máu', 'hematemesis', 'haematemesis', 'vomiting blood'],
  },
  {
    name: 'melena',
    kind: 'symptom',
    terms: ['phân đen', 'đi ngoài phân đen', 'melena', 'melaena', 'black stools', 'tarry stools'],
  },
  { name: 'epigastric pain', kind: 'symptom', terms: ['đau thượng vị', 'epigastric pain'] },
  { name: 'heartburn', kind: 'symptom', terms: ['ợ chua', 'ợ nóng', 'heartburn', 'acid reflux'] },
  {
    name: 'diaphoresis',
    kind: 'sign',
    terms: ['vã mồ hôi', 'toát mồ hôi', 'diaphoresis', 'diaphoretic', 'sweating'],
  },
  { name: 'constipation', kind: 'symptom', terms: ['táo bón', 'constipation', 'constipated'] },
  { name: 'fatigue', kind: 'symptom', terms: ['mệt', 'mệt mỏi', 'fatigue', 'tiredness', 'malaise'] },
  { name: 'dizziness', kind: 'symptom', terms: ['chóng mặt', 'hoa mắt', 'dizziness', 'dizzy', 'vertigo'] },
  {
    name: 'myalgia',
    kind: 'symptom',
    terms: ['đau cơ', 'đau mỏi cơ', 'myalgia', 'muscle aches', 'muscle pain'],
  },
  { name: 'arthralgia', kind: 'symptom', terms: ['đau khớp', 'arthralgia', 'joint pain', 'joint pains'] },
  {
    name: 'retro-orbital pain',
    kind: 'symptom',
    terms: [
      'đau hốc mắt',
      'đau sau hốc mắt',
      'retro-orbital pain',
      'retroorbital pain',
      'pain behind the eyes',
    ],
  },
  {
    name: 'night sweats',
    kind: 'symptom',
    terms: ['đổ mồ hôi đêm', 'ra mồ hôi trộm', 'mồ hôi trộm', 'night sweats'],
  },
  {
    name: 'weight loss',
    kind: 'symptom',
    terms: ['sụt cân', 'gầy sút', 'giảm cân', 'weight loss', 'lost weight'],
  },
  {
    name: 'loss of appetite',
    kind: 'symptom',
    terms: ['chán ăn', 'ăn kém', 'loss of appetite', 'poor appetite', 'anorexia'],
  },
  {
    name: 'palpitations',
    kind: 'symptom',
    terms: ['hồi hộp', 'đánh trống ngực', 'palpitations', 'palpitation'],
  },
  { name: 'syncope', kind: 'symptom', terms: ['ngất', 'ngất xỉu', 'syncope', 'fainting', 'passed out'] },
  {
    name: 'seizure',
    kind: 'symptom',
    terms: ['co giật', 'seizure', 'seizures', 'convulsion', 'convulsions'],
  },
  { name: 'confusion', kind: 'symptom', terms: ['lú lẫn', 'confusion', 'confused', 'altered mental status'] },
  {
    name: 'dysuria',
    kind: 'symptom',
    terms: ['tiểu buốt', 'tiểu rát', 'đái buốt', 'dysuria', 'painful urination'],
  },
  {
    name: 'urinary frequency',
    kind: 'symptom',
    terms: ['tiểu nhiều lần', 'tiểu rắt', 'đái rắt', 'urinary frequency', 'frequent urination'],
  },
  { name: 'back pain', kind: 'symptom', terms: ['đau lưng', 'back pain', 'low back pain'] },
  { name: 'loss of smell', kind: 'symptom', terms: ['mất mùi', 'mất khứu giác', 'anosmia', 'loss of smell'] },
  { name: 'bleeding gums', kind: 'sign', terms: ['chảy máu chân răng', 'chảy máu lợi', 'bleeding gums'] },
  {
    name: 'epistaxis',
    kind: 'sign',
    terms: ['chảy máu mũi', 'chảy máu cam', 'epistaxis', 'nosebleed', 'nosebleeds'],
  },
  {
    name: 'slurred speech',
    kind: 'sign',
    terms: ['nói khó', 'nói ngọng', 'nói đớ', 'slurred speech', 'dysarthria'],
  },
  {
    name: 'hemiparesis',
    kind: 'sign',
    terms: ['yếu nửa người', 'liệt nửa người', 'hemiparesis', 'hemiplegia', 'one-sided weakness'],
  },
  { name: 'facial droop', kind: 'sign', terms: ['méo miệng', 'liệt mặt', 'facial droop', 'facial palsy'] },
  // Signs.
  { name: 'rash', kind: 'sign', terms: ['phát ban', 'nổi ban', 'ban đỏ', 'nổi mẩn', 'rash', 'skin rash'] },
  {
    name: 'petechiae',
    kind: 'sign',
    terms: ['chấm xuất huyết', 'xuất huyết dưới da', 'ban xuất huyết', 'petechiae', 'petechial rash'],
  },
  {
    name: 'pharyngeal exudate',
    kind: 'sign',
    terms: [
      'họng có mủ',
      'amidan có mủ',
      'mủ ở amidan',
      'amidan có chấm mủ',
      'chấm mủ trên amidan',
      'pharyngeal exudate',
      'pharyngeal exudates',
      'tonsillar exudate',
      'tonsillar exudates',
      'exudative tonsillitis',
      'exudative pharyngitis',
      'exudate on the tonsils',
      'exudates on the tonsils',
    ],
  },
  {
    name: 'lymphadenopathy',
    kind: 'sign',
    terms: [
      'nổi hạch',
      'hạch to',
      'sưng hạch',
      'hạch cổ to',
      'lymphadenopathy',
      'cervical lymphadenopathy',
      'swollen lymph nodes',
      'enlarged lymph nodes',
      'swollen glands',
    ],
  },
  { name: 'jaundice', kind: 'sign', terms: ['vàng da', 'vàng mắt', 'jaundice', 'icterus', 'jaundiced'] },
  {
    name: 'edema',
    kind: 'sign',
    terms: ['phù', 'phù chân', 'edema', 'oedema', 'leg swelling', 'swollen legs'],
  },
  {
    name: 'wheezing',
    kind: 'sign',
    terms: ['khò khè', 'thở rít', 'ran rít', 'wheezing', 'wheeze', 'wheezes'],
  },
  { name: 'tachypnea', kind: 'sign', terms: ['thở nhanh', 'tachypnea', 'tachypnoea', 'rapid breathing'] },
  {
    name: 'chest indrawing',
    kind: 'sign',
    terms: ['rút lõm lồng ngực', 'co kéo lồng ngực', 'chest indrawing', 'chest wall indrawing'],
  },
  { name: 'crackles', kind: 'sign', terms: ['ran nổ', 'ran ẩm', 'crackles', 'rales'] },
  {
    name: 'neck stiffness',
    kind: 'sign',
    terms: ['cứng cổ', 'cứng gáy', 'gáy cứng', 'neck stiffness', 'stiff neck', 'nuchal rigidity'],
  },
  { name: 'hepatomegaly', kind: 'sign', terms: ['gan to', 'hepatomegaly', 'enlarged liver'] },
  // Past conditions and exposures (history).
  {
    name: 'hypertension',
    kind: 'history',
    terms: ['tăng huyết áp', 'cao huyết áp', 'THA', 'hypertension', 'HTN', 'high blood pressure'],
  },
  {
    name: 'diabetes mellitus',
    kind: 'history',
    terms: ['đái tháo đường', 'tiểu đường', 'ĐTĐ', 'diabetes', 'diabetes mellitus', 'DM', 'T2DM', 'diabetic'],
  },
  { name: 'asthma', kind: 'history', terms: ['hen', 'hen phế quản', 'asthma'] },
  {
    name: 'copd',
    kind: 'history',
    terms: ['COPD', 'BPTNMT', 'bệnh phổi tắc nghẽn mạn tính', 'chronic obstructive pulmonary disease'],
  },
  { name: 'tuberculosis', kind: 'history', terms: ['lao phổi', 'bệnh lao', 'tuberculosis'] },
  { name: 'heart failure', kind: 'history', terms: ['suy tim', 'heart failure', 'CHF'] },
  { name: 'stroke', kind: 'history', terms: ['đột quỵ', 'tai biến mạch máu não', 'TBMMN', 'stroke'] },
  {
    name: 'chronic kidney disease',
    kind: 'history',
    terms: ['suy thận mạn', 'bệnh thận mạn', 'CKD', 'chronic kidney disease'],
  },
  { name: 'smoking', kind: 'history', terms: ['hút thuốc', 'hút thuốc lá', 'smoker', 'smoking', 'smokes'] },
  {
    name: 'alcohol use',
    kind: 'history',
    terms: ['uống rượu', 'nghiện rượu', 'uống bia rượu', 'alcohol use', 'drinks alcohol', 'alcoholism'],
  },
];

/**
 * Names of diseases that contain a symptom's words ("sốt xuất huyết" is dengue, not a fever
 * reading): they consume their words so no symptom is read inside them. They yield no finding: a
 * disease named in the text is a clinician's impression, not an observation.
 */
export const LEXICON_BLOCKERS: readonly string[] = [
  'sốt xuất huyết',
  'sốt xuất huyết dengue',
  'sốt rét',
  'sốt thương hàn',
  'sốt siêu vi',
  'sốt phát ban',
  'ho gà',
  'dengue fever',
  'yellow fever',
  'scarlet fever',
  'typhoid fever',
  'rheumatic fever',
  'hay fever',
  'whooping cough',
  // "phù hợp" (consistent with) is not oedema.
  'phù hợp',
];

export interface LexiconMatch extends Span {
  readonly name: string;
  readonly kind: ExtractedKind;
  readonly id?: string;
}

/** The lexicon's terms in the text: whole words, longest first, blockers consuming their words. */
export function matchLexicon(
  text: FoldedText,
  lexicon: readonly LexiconEntry[] = BASE_LEXICON,
  blockers: readonly string[] = LEXICON_BLOCKERS,
): LexiconMatch[] {
  const candidates: (LexiconMatch & { blocker: boolean })[] = [];
  for (const { item, at } of compiledLexicon(lexicon, blockers).occurrences(text)) {
    const entry = item.entry;
    candidates.push(
      entry === null
        ? { start: at.start, end: at.end, name: '', kind: 'symptom', blocker: true }
        : {
            start: at.start,
            end: at.end,
            name: entry.name,
            kind: entry.kind,
            ...(entry.id === undefined ? {} : { id: entry.id }),
            blocker: false,
          },
    );
  }
  return keepLongest(candidates)
    .filter((m) => !m.blocker)
    .map(({ blocker: _blocker, ...match }) => match);
}

/**
 * Folds a lexicon's terms and indexes them now (a base's lexicon when the base loads), rather than
 * on the first text read with it.
 */
export function prepareLexicon(
  lexicon: readonly LexiconEntry[],
  blockers: readonly string[] = LEXICON_BLOCKERS,
): void {
  compiledLexicon(lexicon, blockers);
}

/** A term of the lexicon (or a blocker: `entry` null), folded once. */
interface LexiconItem {
  readonly term: string;
  readonly needle: string;
  readonly abbreviation: boolean;
  readonly entry: LexiconEntry | null;
  /** The first word a text must hold for the term to be looked for (blockers: always looked for). */
  readonly firstWord: string | null;
  /** Written with Vietnamese diacritics: not looked for in an English text. */
  readonly diacritics: boolean;
}

const WORD_UNIT = /[\p{L}\p{N}]/u;

/**
 * A lexicon's terms, folded and indexed by their first word, so reading a text costs its words
 * times the lengths of the terms starting with each, not the lexicon's size times the text: a
 * base's lexicon holds every label and synonym of its features (tens of thousands with the HPO
 * import), and each used to be folded again (past the fold cache's size) and searched for in the
 * whole text on every request.
 *
 * It finds what searching the text for each term in turn finds, in the same order (terms in the
 * lexicon's order, each from the start of the text; blockers last): a term starting with a letter
 * or digit can only start where a word does, and the text's word there is the term's first word.
 */
class CompiledLexicon {
  readonly #items: LexiconItem[] = [];
  /** Items by folded term. */
  readonly #byNeedle = new Map<string, number[]>();
  /** Per first word (letters and digits, by UTF-16 unit): the lengths of the terms starting so. */
  readonly #lengths = new Map<string, number[]>();
  /** Items whose term starts with neither a letter nor a digit: searched for in the whole text. */
  readonly #unanchored: number[] = [];

  constructor(lexicon: readonly LexiconEntry[], blockers: readonly string[]) {
    const add = (term: string, entry: LexiconEntry | null): void => {
      const needle = foldTerm(term);
      if (needle === '') return;
      const first = entry === null ? null : (/^[\p{L}\p{N}]+/u.exec(needle)?.[0] ?? null);
      const index = this.#items.length;
      this.#items.push({
        term,
        needle,
        abbreviation: isAbbreviation(term),
        entry,
        firstWord: first,
        diacritics: entry !== null && hasDiacritics(term),
      });
      let unit = 0;
      while (unit < needle.length && WORD_UNIT.test(needle[unit] ?? '')) unit++;
      if (unit === 0) {
        this.#unanchored.push(index);
        return;
      }
      const same = this.#byNeedle.get(needle);
      if (same === undefined) {
        this.#byNeedle.set(needle, [index]);
        const word = needle.slice(0, unit);
        const lengths = this.#lengths.get(word) ?? [];
        if (!lengths.includes(needle.length)) lengths.push(needle.length);
        this.#lengths.set(word, lengths);
      } else same.push(index);
    };
    for (const entry of lexicon) for (const term of entry.terms) add(term, entry);
    for (const term of blockers) add(term, null);
    for (const lengths of this.#lengths.values()) lengths.sort((a, b) => a - b);
  }

  /** Every occurrence of every term, in the order described above. */
  occurrences(text: FoldedText): { item: LexiconItem; at: TermOccurrence }[] {
    const folded = text.folded;
    const words = new Set(folded.match(/[\p{L}\p{N}]+/gu) ?? []);
    const english = looksEnglish(text);
    const found: { index: number; at: TermOccurrence }[] = [];
    const consider = (index: number, start: number, end: number): void => {
      const item = this.#items[index];
      if (item === undefined || (item.firstWord !== null && !words.has(item.firstWord))) return;
      if (english && item.diacritics) return;
      const at = occurrenceAt(text, item.term, item.abbreviation, start, end);
      if (at !== null) found.push({ index, at });
    };
    const isWord = new Uint8Array(folded.length + 1);
    for (let i = 0; i < folded.length; i++) isWord[i] = WORD_UNIT.test(folded[i] ?? '') ? 1 : 0;
    for (let start = 0; start < folded.length; start++) {
      if (isWord[start] === 0 || (start > 0 && isWord[start - 1] === 1)) continue;
      let end = start;
      while (isWord[end] === 1) end++;
      for (const length of this.#lengths.get(folded.slice(start, end)) ?? []) {
        if (start + length > folded.length) break;
        for (const index of this.#byNeedle.get(folded.slice(start, start + length)) ?? [])
          consider(index, start, start + length);
      }
    }
    for (const index of this.#unanchored) {
      const needle = this.#items[index]?.needle ?? '';
      for (let at = folded.indexOf(needle); at >= 0; at = folded.indexOf(needle, at + 1))
        consider(index, at, at + needle.length);
    }
    found.sort((a, b) => a.index - b.index || a.at.start - b.at.start || a.at.end - b.at.end);
    return found.map(({ index, at }) => ({ item: this.#items[index] as LexiconItem, at }));
  }
}

const compiled = new WeakMap<readonly LexiconEntry[], WeakMap<readonly string[], CompiledLexicon>>();

function compiledLexicon(lexicon: readonly LexiconEntry[], blockers: readonly string[]): CompiledLexicon {
  let byBlockers = compiled.get(lexicon);
  if (byBlockers === undefined) {
    byBlockers = new WeakMap();
    compiled.set(lexicon, byBlockers);
  }
  let known = byBlockers.get(blockers);
  if (known === undefined) {
    known = new CompiledLexicon(lexicon, blockers);
    byBlockers.set(blockers, known);
  }
  return known;
}

/**
 * Lexicon entries from knowledge-base features: the feature id as `id`, the English label (lower
 * case) as the name, the labels and synonyms as terms. Vitals and labs are read by their words too
 * ("tachycardic", "mạch nhanh", "tiểu máu"), besides the value rules that read their numbers;
 * demographics are left to the value rules. Listed before `BASE_LEXICON`
 * (`[...lexiconFromFeatures(f), ...BASE_LEXICON]`), a feature wins over a built-in entry for the
 * same words, so its findings carry the feature id.
 */
export function lexiconFromFeatures(features: readonly KbFeature[]): LexiconEntry[] {
  return features
    .filter((f) => f.kind !== 'demographic')
    .map((f) => ({
      name: f.label_en.toLowerCase(),
      id: f.id,
      kind: f.kind,
      terms: [f.label_en, ...(f.label_vi === null ? [] : [f.label_vi]), ...f.synonyms],
    }));
}
