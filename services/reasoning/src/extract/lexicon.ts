/**
 * The rule pass's term lists for symptoms, signs and past conditions, so findings come out of the
 * text even without an LLM (or when it fails). Names are normalised English, lower case; the
 * knowledge base's synonyms can be added with `lexiconFromFeatures`. Words only: no numbers here.
 */
import type { KbFeature } from '../domain/types.js';
import { findTerm, keepLongest, possibleTerms, type Span } from './terms.js';
import type { FoldedText } from './text.js';
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
  const possible = possibleTerms(text);
  for (const entry of lexicon) {
    const id = entry.id === undefined ? {} : { id: entry.id };
    for (const term of entry.terms) {
      if (!possible(term)) continue;
      for (const at of findTerm(text, term))
        candidates.push({
          start: at.start,
          end: at.end,
          name: entry.name,
          kind: entry.kind,
          ...id,
          blocker: false,
        });
    }
  }
  for (const term of blockers) {
    for (const at of findTerm(text, term))
      candidates.push({ start: at.start, end: at.end, name: '', kind: 'symptom', blocker: true });
  }
  return keepLongest(candidates)
    .filter((m) => !m.blocker)
    .map(({ blocker: _blocker, ...match }) => match);
}

/**
 * Lexicon entries from knowledge-base features: the feature id as `id`, the English label (lower
 * case) as the name, the labels and synonyms as terms. Vitals, labs and demographics are left to
 * the value rules. Listed before `BASE_LEXICON` (`[...lexiconFromFeatures(f), ...BASE_LEXICON]`),
 * a feature wins over a built-in entry for the same words, so its findings carry the feature id.
 */
export function lexiconFromFeatures(features: readonly KbFeature[]): LexiconEntry[] {
  return features
    .filter((f) => f.kind !== 'vital' && f.kind !== 'lab' && f.kind !== 'demographic')
    .map((f) => ({
      name: f.label_en.toLowerCase(),
      id: f.id,
      kind: f.kind,
      terms: [f.label_en, ...(f.label_vi === null ? [] : [f.label_vi]), ...f.synonyms],
    }));
}
