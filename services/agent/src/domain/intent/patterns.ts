import type { ConcreteIntent } from '../types.js';

/**
 * The keyword table of the rule layer: weighted regular expressions per intent, in Vietnamese and
 * English, plus the features (symptoms, code talk...) some patterns depend on.
 *
 * How a source is matched (see rules.ts):
 * - by default against the FOLDED message: lower case, Vietnamese diacritics removed (NFD, combining
 *   marks stripped, đ -> d). The source is folded the same way, so `dịch sang tiếng anh` matches
 *   "Dịch sang tiếng Anh" and "dich sang tieng anh" alike;
 * - `strict: true` also against the lower-case message WITH its diacritics, each accented letter of
 *   the source accepting itself or its bare letter: `lỗi` matches "lỗi" and "loi" but not "lời"
 *   (words), `mã` matches "mã" and "ma" but not "má". Used for short words whose bare spelling
 *   collides with another word. A strict pattern matches where its folded form matches the folded
 *   message AND (for a message with diacritics) its strict form matches. `\b` in a strict source is a
 *   Unicode-aware word boundary. Write strict sources without accented letters inside `[...]` classes
 *   and without `\-` (they compile with the `u` flag).
 *
 * Weights: 1 a hint that needs company, 1.5 a question form (chat), 2 moderate evidence, 3 strong,
 * 4-5 decisive. A negative weight is evidence against an intent (disambiguation). An intent's score is
 * the sum of the weights of its patterns that matched (each pattern once), floored at 0.
 *
 * Names are stable identifiers reported in `matched` (never message text): `<intent>.<lang>.<slug>`.
 */

/** Conditions a pattern may depend on, computed once per message. */
export type Feature =
  /** A symptom word (fever, pain, sốt, đau...). */
  | 'symptom'
  /** A disease or condition name. */
  | 'disease'
  /** The speaker or a patient is the subject (tôi bị, I have, bệnh nhân, 45-year-old...). */
  | 'person'
  /** Programming talk or code syntax. */
  | 'code'
  /** A picture was attached. */
  | 'image'
  /** An audio file was attached. */
  | 'audio';

export interface PatternSpec {
  readonly name: string;
  readonly intent: ConcreteIntent;
  readonly weight: number;
  readonly source: string;
  readonly strict?: boolean;
  /** Every feature listed must be present. */
  readonly requires?: readonly Feature[];
  /** None of the features listed may be present. */
  readonly unless?: readonly Feature[];
}

export interface FeatureSpec {
  readonly feature: Exclude<Feature, 'image' | 'audio'>;
  readonly name: string;
  readonly source: string;
  readonly strict?: boolean;
}

const PROGRAMMING_LANGUAGES =
  'python|typescript|javascript|java|golang|rust|ruby|php|kotlin|swift|c\\+\\+|c#|node\\.?js|sql|bash|powershell|html|css|react|django|flask';
const NATURAL_LANGUAGES = 'anh|việt|pháp|trung|nhật|hàn|đức|nga|tây ban nha|thái|lào|khmer';
const EN_NATURAL_LANGUAGES =
  'english|vietnamese|french|chinese|japanese|korean|german|russian|spanish|thai|lao|khmer';
const IMAGE_WORDS = 'ảnh|hình|bức ảnh|tấm ảnh|hình ảnh|ảnh chụp|image|photo|picture|pic|scan|screenshot';

const VI_SYMPTOMS =
  '(?:sốt|ho khan|ho có đờm|ho ra máu|ho kéo dài|ho nhiều|bị ho|đau|nhức|(?<!bổ )sưng|viêm|(?<!phòng )ngứa|nôn|buồn nôn|tiêu chảy|táo bón|chóng mặt|hoa mắt|khó thở|mệt|mệt mỏi|phát ban|nổi mẩn|nổi ban|chảy máu|co giật|tiểu buốt|tiểu rắt|mất ngủ|sụt cân|vàng da|phù nề|phù chân|tê bì|run tay|khàn tiếng|sổ mũi|nghẹt mũi|hắt hơi|đau đầu|đau bụng|đau ngực|tức ngực)';
// A word's ending is at most 20 letters (`cough\w{0,20}`: coughs, coughing): every alternative reads
// a bounded stretch, so the list (twice in `en.symptom-list`) costs a bounded time at each position.
const EN_SYMPTOMS =
  '(?:fever|cough\\w{0,20}|pain\\w{0,20}|aches?|aching|headaches?|nausea|vomit\\w{0,20}|diarrh\\w{0,20}|dizz\\w{0,20}|rash\\w{0,20}|swell\\w{0,20}|swollen|bleed\\w{0,20}|seizures?|short(?:ness)? of breath|breathless|fatigue|tired|itch\\w{0,20}|sore throat|runny nose|chills|palpitations?|numb\\w{0,20}|blurred vision|weight loss|jaundice|insomnia|wheez\\w{0,20}|cramps?)';

export const FEATURES: readonly FeatureSpec[] = [
  { feature: 'symptom', name: 'symptom.vi', strict: true, source: `\\b${VI_SYMPTOMS}\\b` },
  { feature: 'symptom', name: 'symptom.en', source: `\\b${EN_SYMPTOMS}\\b` },
  {
    feature: 'disease',
    name: 'disease.vi',
    strict: true,
    source:
      '\\b(?:bệnh(?! nhân| viện)|viêm|ung thư|tiểu đường|đái tháo đường|tăng huyết áp|huyết áp|hen suyễn|bệnh hen|lao phổi|bệnh lao|sốt xuất huyết|gãy xương|đột quỵ|nhiễm trùng|nhiễm khuẩn|suy tim|suy thận|xơ gan|trầm cảm|thiếu máu|đau lưng|đau nửa đầu|cúm|sởi|thủy đậu|covid)\\b',
  },
  {
    feature: 'disease',
    name: 'disease.en',
    source:
      '\\b(?:diabetes|hypertension|pneumonia|asthma|cancer|infection|fracture|stroke|migraine|hepatitis|tuberculosis|covid(?:-19)?|influenza|flu|sepsis|anemia|anaemia|depression|dengue|obesity|measles|heart failure|back pain|disease|disorder|syndrome|surgery|replacement|biopsy|\\w{3,}ectomy|\\w{3,}otomy|\\w{3,}plasty|\\w{3,}scopy|\\w{3,}itis|\\w{3,}oma|\\w{3,}emia|\\w{3,}pathy|\\w{3,}algia)\\b',
  },
  {
    feature: 'person',
    name: 'person.vi',
    strict: true,
    source:
      '\\b(?:(?:tôi|em|mình|con tôi|con em|bé|cháu|bố tôi|mẹ tôi|vợ tôi|chồng tôi|bệnh nhân|người bệnh|bn)(?:\\s+nhà tôi)?\\s+(?:[\\p{L}\\p{N}]+\\s+)?(?:bị|đang bị|hay bị|thấy|có|hay|nam|nữ|sốt|đau|ho|nôn)|bệnh nhân (?:nam|nữ)|\\d+\\s*tuổi)\\b',
  },
  {
    feature: 'person',
    name: 'person.en',
    source:
      "\\b(?:i have|i've had|i've been|i had|i am having|i'm having|i feel|i keep|i get|my (?:son|daughter|child|baby|wife|husband|mother|father|mom|dad|face|head|chest|stomach|belly|back|legs?|arms?|skin|eyes?|throat|knees?|feet|foot|hands?|ears?|neck)\\b|(?:the )?patient (?:has|is|with|presents|complains)|\\d+[- ]?(?:year[- ]old|yo|y/o)|(?:male|female|man|woman|boy|girl) with)",
  },
  {
    feature: 'code',
    name: 'code.words',
    strict: true,
    source: `\\b(?:code|coding|mã nguồn|source code|đoạn mã|lập trình|programming|phần mềm|software|script|api|thuật toán|algorithm|compil\\w*|biên dịch|${PROGRAMMING_LANGUAGES})(?![\\p{L}\\p{N}_])`,
  },
  {
    feature: 'code',
    name: 'code.syntax',
    // `import` after blanks other than line breaks, `name()` from a word's start: each reads a run
    // of blanks or letters once, not again from each of its characters.
    source:
      '```|\\bdef \\w+\\(|\\bfunction\\s*\\w*\\(|=>|\\b(?:const|let|var) \\w+ =|(?:^|\\n)[^\\S\\n]*import \\w|#include|\\bpublic (?:static )?\\w+|console\\.log|\\bprint\\(|;\\s*(?:\\n|$)|\\b\\w+\\(\\)\\s*[{;]',
  },
];

const p = (
  intent: ConcreteIntent,
  weight: number,
  name: string,
  source: string,
  options: Pick<PatternSpec, 'strict' | 'requires' | 'unless'> = {},
): PatternSpec => ({ intent, weight, name: `${intent}.${name}`, source, ...options });

export const PATTERNS: readonly PatternSpec[] = [
  // ---- chat: greetings, thanks, who-are-you, general (medical) questions -------------------------
  p('chat', 2, 'vi.greeting', '^\\W*(?:xin chào|chào|alo|a lô)\\b', { strict: true }),
  p('chat', 2, 'en.greeting', '^\\W*(?:hello|hi|hey|good (?:morning|afternoon|evening))\\b'),
  p('chat', 1.5, 'vi.how-many', '\\bmấy\\b', { strict: true }),
  p('chat', 2, 'vi.may-i-ask', '\\b(?:cho (?:em|tôi|mình|cháu|con) hỏi|(?:bác sĩ|bs|bác) ơi)\\b'),
  p('chat', 2, 'vi.thanks', '\\b(?:cảm ơn|cám ơn)\\b'),
  p('chat', 2, 'en.thanks', '\\bthank(?:s| you)\\b'),
  p('chat', 3, 'vi.about-you', '\\bbạn (?:là ai|có thể làm gì|làm được gì|giúp được gì)'),
  p('chat', 3, 'en.about-you', '\\b(?:who are you|what can you do)\\b'),
  p(
    'chat',
    1.5,
    'vi.question',
    '\\b(?:là gì|là sao|tại sao|vì sao|có nên|nên (?:ăn|uống|làm|dùng|tập|kiêng)|có (?:tốt|sao|nguy hiểm|an toàn|hại|lây|được) không|làm (?:thế|sao) nào|như thế nào|thế nào|bao lâu|bao nhiêu|giải thích|cho (?:tôi|mình|em) biết|khác nhau)\\b|\\b(?:gì|nào|không|chưa|sao|vậy)\\W*$',
  ),
  p(
    'chat',
    1.5,
    'en.question',
    "\\b(?:what (?:is|are)|what's|how (?:do|does|can|should|to|much|many|long|often|is)|why|should i|is it (?:safe|ok|okay|normal|dangerous|contagious)|can i|explain|tell me about|difference between|recommend|suggest)\\b|^\\W*(?:what|which|when|where|how|why)\\b",
  ),
  p(
    'chat',
    1,
    'vi.medical-knowledge',
    '\\b(?:triệu chứng của|dấu hiệu của|nguyên nhân (?:của|gây)|cách (?:phòng|điều trị|chữa))',
  ),
  p(
    'chat',
    1,
    'en.medical-knowledge',
    '\\b(?:symptoms of|signs of|causes of|treatment (?:for|of)|prevent\\w*)\\b',
  ),
  p('chat', 2, 'vi.advice', '\\b(?:lời khuyên|mẹo)\\b', { strict: true }),
  p('chat', 2, 'en.advice', '\\b(?:advice|tips)\\b'),
  p(
    'chat',
    5,
    'any.what-is-coding-system',
    "^\\W*(?:(?:icd|icpc|cpt)[- ]?(?:10|11|2)?(?:-cm)? là gì|what(?: is|'s) (?:the )?(?:icd|icpc|cpt)[- ]?(?:10|11|2)?(?:-cm)?)\\W*$",
  ),
  p('chat', 2, 'vi.write-prose', '\\bviết (?:thư|email|bài thơ|thơ|thiệp|lời chúc|bài văn)\\b'),
  p(
    'chat',
    2,
    'en.write-prose',
    '\\bwrite (?:me )?(?:a |an )?(?:\\w+ )?(?:poem|email|letter|story|essay|message|note to)\\b',
  ),
  p('chat', 2, 'vi.spelling', '\\blỗi (?:chính tả|ngữ pháp)\\b', { strict: true }),
  p('chat', 2, 'en.spelling', '\\b(?:spelling|grammar)\\b'),
  p('chat', 2, 'en.face-mask', '\\bface ?masks?\\b'),

  // ---- transcribe: speech to text ----------------------------------------------------------------
  p('transcribe', 4, 'vi.chep-loi', '\\b(?:chép (?:lại )?lời|ghi lại lời|phiên âm|gỡ băng|bóc băng)\\b'),
  p(
    'transcribe',
    4,
    'vi.audio-to-text',
    '\\b(?:ghi âm|giọng nói|âm thanh|audio|băng ghi âm|cuộc gọi|lời nói)\\b.{0,30}\\b(?:thành|sang|ra) (?:văn bản|chữ|text)\\b',
  ),
  p('transcribe', 4, 'vi.speech-recognition', '\\bnhận (?:dạng|diện) (?:giọng nói|tiếng nói|lời nói)\\b'),
  p('transcribe', 3, 'vi.nghe-file', '\\bnghe (?:file|tệp|đoạn|bản ghi|băng)\\b'),
  p('transcribe', 2, 'vi.recording', '\\b(?:ghi âm|đoạn ghi âm|file ghi âm)\\b'),
  p('transcribe', 1, 'vi.audio-file', '\\b(?:file|đoạn|tệp) âm thanh\\b'),
  p('transcribe', 4, 'en.transcribe', '\\btranscri(?:be|bing|ption)\\b'),
  p('transcribe', 1, 'en.transcript', '\\btranscripts?\\b'),
  p(
    'transcribe',
    4,
    'en.speech-to-text',
    '\\b(?:speech|voice|audio)[- ]to[- ]text\\b|\\bstt\\b|\\bdictat(?:e|ion)\\b',
  ),
  p(
    'transcribe',
    4,
    'en.audio-into-text',
    '\\b(?:audio|recording|voice|speech|memo)\\b.{0,30}\\b(?:in)?to (?:text|words|writing)\\b',
  ),
  p(
    'transcribe',
    2,
    'en.recording',
    '\\b(?:audio (?:file|clip)|recording|voice (?:memo|note|message)|voicemail)s?\\b',
  ),
  p('transcribe', 1.5, 'en.clip', '\\b(?:audio |voice |sound )?clips?\\b'),
  p(
    'transcribe',
    2,
    'en.what-was-said',
    '\\b(?:what (?:is|was) said|what (?:the \\w+|they|he|she|\\w+) (?:says|said)|write down what|type out)\\b',
  ),

  // ---- ocr: text out of an image -----------------------------------------------------------------
  p('ocr', 4, 'any.ocr', '\\bocr\\b'),
  p('ocr', 4, 'vi.text-recognition', '\\bnhận (?:dạng|diện) (?:chữ|ký tự|văn bản)'),
  p(
    'ocr',
    4,
    'any.text-in-image',
    `\\b(?:chữ|chữ viết|văn bản|nội dung chữ|text|writing|handwriting|words)\\s+(?:trong|trên|từ|của|in|on|from|off|out of)\\s+(?:cái |tấm |bức |this |the |that |these |my )?(?:${IMAGE_WORDS})`,
  ),
  p(
    'ocr',
    3,
    'any.image-says',
    `\\b(?:${IMAGE_WORDS})\\b.{0,25}\\b(?:ghi chữ|ghi gì|viết gì|chữ gì|text|say|says|written)\\b|\\b(?:label|text|writing|words|chữ|nhãn)\\b.{0,30}\\b(?:trong|trên|in|on|of) (?:this|the|that|cái|tấm|bức)?.{0,20}\\b(?:${IMAGE_WORDS})\\b`,
  ),
  p(
    'ocr',
    3,
    'any.extract-from-image',
    `\\b(?:trích xuất|trích|lấy|extract|pull|get|copy)\\b.{0,30}\\b(?:từ|trong|from|in|out of)\\s+(?:this |the |that |cái |tấm |bức )?(?:${IMAGE_WORDS})\\b`,
  ),
  p('ocr', 3, 'vi.doc-chu', '\\bđọc (?:giúp |hộ )?(?:chữ|văn bản|nhãn|nội dung chữ|chữ viết)\\b'),
  p(
    'ocr',
    3,
    'vi.doc-anh',
    '\\bđọc (?:giúp |hộ )?(?:ảnh|hình|bức ảnh|tấm ảnh|ảnh chụp|đơn thuốc|giấy|phiếu|tài liệu)\\b',
  ),
  p('ocr', 3, 'any.handwriting', '\\b(?:handwriting|handwritten|chữ viết tay|viết tay)\\b'),
  p('ocr', 2, 'any.scan', '\\b(?:quét|scan\\w*)\\b'),
  p('ocr', -3, 'any.medical-scan', '\\b(?:ct|mri|pet|cat|bone|chụp ct|chụp mri)[- ]?scans?\\b'),
  p('ocr', 2, 'any.read-with-image', '\\b(?:đọc|read)\\b', { strict: true, requires: ['image'] }),
  p('ocr', 1, 'any.to-text', '\\b(?:thành văn bản|to text)\\b', { unless: ['audio'] }),

  // ---- search_code: ICD-10 / ICPC-2 / CPT / service and procedure codes --------------------------
  p('search_code', 4, 'any.coding-system', '\\b(?:icd|icpc|cpt)(?:[- ]?(?:10|11|9|2)(?:-cm|-pcs)?)?\\b'),
  p(
    'search_code',
    4,
    'vi.ma-benh',
    '\\bmã (?:icd|icpc|cpt|bệnh|chẩn đoán|thủ thuật|phẫu thuật|dịch vụ|kỹ thuật|bhyt|bảo hiểm)\\b',
    { strict: true },
  ),
  p('search_code', 3, 'vi.tra-ma', '\\b(?:tra (?:cứu )?|tìm |lấy )mã\\b', { strict: true }),
  p('search_code', 1, 'vi.ma', '\\bmã\\b', { strict: true }),
  p('search_code', 2, 'vi.ma-disease', '\\bmã\\b', { strict: true, requires: ['disease'] }),
  p(
    'search_code',
    4,
    'en.medical-code',
    '\\b(?:diagnosis|diagnostic|billing|procedure|disease|medical|service|insurance)\\s+codes?\\b',
  ),
  p('search_code', 3, 'en.code-for-disease', '\\bcodes? for\\b', { requires: ['disease'] }),
  p('search_code', 3, 'en.code-for-symptom', '\\bcodes? for\\b', { requires: ['symptom'], unless: ['code'] }),
  p(
    'search_code',
    3,
    'en.search-codes',
    '\\b(?:search|find|look for|list)\\s+(?:for )?(?:the |all |a )?(?:\\w+ )?codes?\\b',
    {
      requires: ['disease'],
    },
  ),
  p('search_code', 3, 'en.look-up-code', '\\blook ?up (?:the |a )?codes?\\b'),
  p('search_code', 3, 'any.icd-like-code', '\\b[a-z]\\d\\d\\.\\d{1,2}\\b'),

  // ---- translate ---------------------------------------------------------------------------------
  p(
    'translate',
    2,
    'vi.dich',
    '(?<!miễn |bệnh |biên |thông |vùng |ổ |đại |tiết |truyền )\\bdịch\\b(?! (?:vụ|tễ|bệnh|truyền|màng|tiết|hạch|khớp|não|dạ dày|mật|vị|chuyển|cúm|tả|tủy|bạch huyết))',
    { strict: true },
  ),
  p('translate', 3, 'vi.dich-sang', '\\bdịch\\b.{0,60}\\b(?:sang|ra|qua) (?:tiếng|ngôn ngữ)\\b', {
    strict: true,
  }),
  p('translate', 3, 'vi.sang-tieng', `\\b(?:sang|qua) tiếng (?:${NATURAL_LANGUAGES})\\b`),
  p(
    'translate',
    4,
    'vi.tieng-x-la-gi',
    `\\btiếng (?:${NATURAL_LANGUAGES}) (?:là gì|nói thế nào|nói sao|gọi là gì)`,
  ),
  p('translate', 1.5, 'vi.bang-tieng', `\\bbằng tiếng (?:${NATURAL_LANGUAGES})\\b`),
  p('translate', 3, 'vi.ban-dich', '\\b(?:bản dịch|phiên dịch|dịch thuật|dịch giúp|dịch hộ|dịch giùm)\\b', {
    strict: true,
  }),
  p('translate', 3, 'en.translate', '\\btranslat(?:e|es|ed|ing|ion)\\b'),
  p('translate', 2, 'en.to-language', `\\b(?:to|into) (?:${EN_NATURAL_LANGUAGES})\\b`),
  p('translate', 1.5, 'en.in-language', `\\bin (?:${EN_NATURAL_LANGUAGES})\\b`),
  p('translate', 2, 'en.how-say', '\\bhow (?:do|would|can) (?:you|i|we) say\\b'),
  p('translate', 3, 'en.word-for', `\\b(?:${EN_NATURAL_LANGUAGES}) (?:word|term|translation) for\\b`),
  // "translate this code to Python" is code work (the target is a programming language).
  p(
    'translate',
    -3,
    'any.to-programming-language',
    `\\b(?:translat\\w*|dịch|chuyển|convert\\w*|port\\w*|rewrite)\\b.{0,50}\\b(?:sang|to|into|qua) (?:${PROGRAMMING_LANGUAGES}|js|ts|go)\\b`,
  ),

  // ---- summarize ---------------------------------------------------------------------------------
  p('summarize', 4, 'vi.tom-tat', '\\b(?:tóm tắt|tóm lược|tổng kết|rút gọn|tóm gọn)\\b'),
  p('summarize', 3, 'vi.y-chinh', '\\b(?:ý chính|nội dung chính|điểm chính|ý quan trọng)\\b'),
  p(
    'summarize',
    4,
    'en.summarize',
    '\\b(?:summari[sz]\\w*|sum up|tl;? ?dr|condense|in a nutshell|gist|recap)\\b',
  ),
  p('summarize', 3, 'en.key-points', '\\b(?:key|main) (?:points|takeaways|ideas)\\b'),
  p('summarize', 1.5, 'en.summary', '\\bsummary\\b'),
  p('summarize', -1.5, 'en.discharge-summary', '\\bdischarge summary\\b'),
  p('summarize', 2, 'en.shorten', '\\b(?:shorten|make (?:it|this) shorter|brief overview)\\b'),

  // ---- analyze: symptoms, cases, results, diagnosis ---------------------------------------------
  p('analyze', 3, 'vi.phan-tich', '\\bphân tích\\b'),
  p('analyze', 4, 'vi.chan-doan-phan-biet', '\\bchẩn đoán phân biệt\\b'),
  p('analyze', 2.5, 'vi.chan-doan', '\\bchẩn đoán\\b'),
  p('analyze', -2, 'vi.ma-chan-doan', '\\bmã chẩn đoán\\b', { strict: true }),
  p('analyze', 3, 'vi.benh-gi', '\\b(?:bị|mắc) (?:bệnh|bịnh) gì\\b|\\bcó thể (?:là|bị) (?:gì|bệnh gì)\\b'),
  p('analyze', 2.5, 'any.person-symptoms', '', { requires: ['person', 'symptom'] }),
  p(
    'analyze',
    2,
    'any.symptom-duration',
    '\\b(?:\\d+|một|hai|ba|bốn|năm|mấy|vài|nhiều|a few|several|two|three|four|five) (?:ngày|tuần|tháng|hôm|days?|weeks?|months?)\\b|\\bsince (?:yesterday|last|this morning)\\b|\\btừ (?:hôm qua|sáng|tối qua|tuần trước)\\b',
    { requires: ['symptom'] },
  ),
  p('analyze', 1.5, 'vi.symptom-list', `\\b${VI_SYMPTOMS}\\b.{1,60}\\b${VI_SYMPTOMS}\\b`, { strict: true }),
  p('analyze', 1.5, 'en.symptom-list', `\\b${EN_SYMPTOMS}\\b.{1,60}\\b${EN_SYMPTOMS}\\b`),
  p('analyze', 1, 'vi.trieu-chung', '\\btriệu chứng\\b'),
  p(
    'analyze',
    3,
    'vi.ket-qua',
    '\\b(?:đánh giá|nhận xét|giải thích|đọc|xem)\\b.{0,20}\\b(?:kết quả|chỉ số)\\b',
  ),
  p('analyze', 1, 'vi.xet-nghiem', '\\b(?:kết quả xét nghiệm|xét nghiệm máu|chỉ số)\\b'),
  p('analyze', 2, 'vi.ca-lam-sang', '\\bca lâm sàng\\b'),
  p('analyze', 3, 'en.analyze', '\\banaly[sz](?:e|es|ed|ing|is)\\b'),
  p('analyze', 4, 'en.differential', '\\b(?:differentials?|ddx)\\b'),
  p('analyze', 2, 'en.diagnosis', '\\bdiagnos(?:e|is|es)\\b'),
  p('analyze', -2, 'en.diagnosis-code', '\\bdiagnos(?:is|tic) codes?\\b'),
  p(
    'analyze',
    3,
    'en.what-could-it-be',
    "\\b(?:what could (?:it|this|that) be|what(?:'s| is) wrong with me|what (?:is|could be|might be) causing)\\b",
  ),
  p(
    'analyze',
    3,
    'en.interpret',
    '\\b(?:interpret|assess|evaluate)\\b.{0,20}\\b(?:results?|labs?|values|findings|ecg|x-ray)\\b',
  ),
  p('analyze', 1, 'en.lab-results', '\\blab (?:results|values|tests?)\\b'),
  p(
    'analyze',
    3,
    'en.case-presentation',
    '\\b(?:presents? with|presenting with|complain(?:s|ing)? of|c/o)\\b',
  ),
  p('analyze', 1.5, 'en.assessment', '\\b(?:assessment|impression|work-?up)\\b'),
  p(
    'analyze',
    3,
    'en.likely-diagnosis',
    '\\b(?:likely|probable|possible|most likely|working) diagnos[ie]s\\b',
  ),
  p('analyze', 2, 'en.clinical-case', '\\bclinical case\\b'),
  p('analyze', -2, 'any.code-work', '', { requires: ['code'] }),
  // The symptoms of a patient to role-play are no case to analyse.
  p(
    'analyze',
    -3,
    'any.simulation',
    '\\b(?:giả lập|mô phỏng|đóng vai|nhập vai|giả làm|vào vai|simulat\\w+|role[- ]?play\\w*|pretend|act as|virtual patient)\\b',
  ),

  // ---- tts: text to speech -----------------------------------------------------------------------
  p('tts', 4, 'vi.doc-to', '\\bđọc (?:to|lớn|thành tiếng|cho (?:tôi|mình|em) nghe|lên)\\b', { strict: true }),
  p(
    'tts',
    4,
    'vi.to-voice',
    '\\b(?:chuyển|đổi)\\b.{0,30}\\b(?:thành|sang|ra) (?:giọng nói|giọng đọc|tiếng nói|âm thanh|audio|file âm thanh)\\b',
  ),
  p('tts', 3, 'vi.tao-am-thanh', '\\btạo (?:file |tệp )?(?:âm thanh|audio|giọng đọc|giọng nói)\\b'),
  p('tts', 3, 'vi.phat-am', '\\bphát âm\\b'),
  p('tts', 1.5, 'vi.giong-noi', '\\b(?:giọng nói|giọng đọc)\\b'),
  p('tts', 4, 'en.text-to-speech', '\\btext[- ]to[- ](?:speech|voice|audio)\\b|\\btts\\b'),
  p(
    'tts',
    4,
    'en.read-aloud',
    '\\b(?:read|say|speak)\\b.{0,40}\\b(?:aloud|out loud)\\b|\\bread (?:it |this |that )?out\\b',
  ),
  p(
    'tts',
    4,
    'en.to-audio',
    '\\b(?:convert|turn|make)\\b.{0,30}\\b(?:to|into) (?:audio|speech|voice|sound|an? (?:audio|mp3|wav|voice)\\w*)\\b',
  ),
  p(
    'tts',
    3,
    'en.generate-speech',
    '\\b(?:generate|create|make|produce|synthesi[sz]e)\\s+(?:an? |the )?(?:speech|audio|voice|spoken)\\b',
  ),
  p(
    'tts',
    3,
    'en.speak',
    '\\b(?:speak (?:this|it|the)|voice ?over|audio version|narrat\\w+|pronounc\\w+)\\b',
  ),

  // ---- code --------------------------------------------------------------------------------------
  p(
    'code',
    4,
    'vi.viet-code',
    '\\b(?:viết|tạo|sinh|lập trình)\\s+(?:một |cho tôi |giúp tôi |giúp |cho mình )?(?:code|đoạn code|đoạn mã|mã(?! (?:icd|icpc|cpt|bệnh|chẩn đoán|thủ thuật|dịch vụ))|hàm|chương trình|script|class|api|truy vấn|câu lệnh sql|unit test|test)\\b',
    { strict: true },
  ),
  p('code', 4, 'vi.ma-nguon', '\\b(?:mã nguồn|đoạn mã|lập trình|thuật toán)\\b', { strict: true }),
  p('code', 2, 'vi.doan-code', '\\b(?:đoạn code|code này|cái code|hàm này)\\b'),
  p('code', 2, 'vi.ma-hoa', '\\bmã hó?a\\b', { requires: ['code'] }),
  p(
    'code',
    4,
    'en.write-code',
    '\\b(?:write|create|generate|build|implement|give me)\\s+(?:me |a |an |the |some |this )?(?!icd|icpc|cpt|diagnos|billing|procedure)(?:\\w+\\s+)?(?:function|code|script|program|class|query|method|unit tests?|regex|component|api|endpoint|module|(?:for |while )?loop)\\b',
  ),
  p('code', 3, 'en.implement', '\\b(?:implement|refactor\\w*)\\b'),
  p(
    'code',
    3,
    'en.code-review',
    '\\b(?:explain|review|optimi[sz]e|document)\\s+(?:this|the|my)\\s+(?:code|function|script|query|snippet)\\b',
  ),
  p('code', 2, 'en.this-code', '\\b(?:this|my|the following) (?:code|snippet|function|script)\\b'),
  p('code', 2, 'any.programming-language', `(?<![\\w.])(?:${PROGRAMMING_LANGUAGES})(?![\\w+#])`),
  p(
    'code',
    2,
    'en.programming-concept',
    '\\b(?:(?:for|while|foreach) loops?|recursi\\w+|arrays?|variables?|data ?structures?)\\b',
  ),
  p('code', 1, 'any.code-word', '\\b(?:code|coding|algorithm|regex)\\b'),
  p(
    'code',
    1.5,
    'any.code-syntax',
    '```|\\bdef \\w+\\(|\\bfunction\\s*\\w*\\(|=>|\\b(?:const|let|var) \\w+ =|#include',
  ),
  p(
    'code',
    5,
    'any.to-programming-language',
    `\\b(?:translat\\w*|dịch|chuyển|convert\\w*|port\\w*|rewrite)\\b.{0,50}\\b(?:sang|to|into|qua) (?:${PROGRAMMING_LANGUAGES}|js|ts|go)\\b`,
  ),
  p(
    'code',
    3,
    'any.explain-code',
    '\\b(?:phân tích|giải thích|review|explain|analy[sz]e)\\b.{0,20}\\b(?:code|mã nguồn|đoạn mã|hàm|function|script)\\b',
    {
      strict: true,
    },
  ),
  p(
    'code',
    4,
    'any.write-script',
    '\\b(?:viết|write|create|tạo)\\s+(?:a |an |một )?(?:bash |shell |python )?script\\b',
  ),

  // ---- debug -------------------------------------------------------------------------------------
  p('debug', 4, 'any.error-name', '\\b\\w*(?:error|exception)\\b:'),
  p(
    'debug',
    4,
    'any.named-error',
    '\\b(?:type|reference|syntax|range|attribute|key|index|value|name|zerodivision|modulenotfound|import|runtime|assertion|nullpointer|illegalargument|illegalstate|outofmemory|stackoverflow)(?:error|exception)\\b',
  ),
  p('debug', 4, 'any.traceback', '\\b(?:traceback|stack ?trace|backtrace)\\b'),
  p(
    'debug',
    4,
    'any.crash-signature',
    '\\b(?:segmentation fault|segfault|core dumped|null pointer|panic:|undefined is not|cannot read propert\\w*|is not defined|is not a function|unhandled promise rejection)\\b',
  ),
  // A frame's location ends at its closing parenthesis or quote: a line of many `at x (` is read
  // once, not to its end again from each of them.
  p(
    'debug',
    4,
    'any.stack-frame',
    '\\bat [\\w.$<>]+ \\([^()\\n]*:\\d+:\\d+\\)|\\bfile "[^"\\n]*", line \\d+',
  ),
  p(
    'debug',
    4,
    'en.fix-error',
    '\\b(?:fix|debug|troubleshoot|solve|resolve)\\s+(?:this |the |my |an |that )?(?:error|bug|issue|crash|exception|problem)\\b',
  ),
  p('debug', 3, 'en.debug', '\\b(?:debug\\w*|bugs?|buggy)\\b'),
  p('debug', 3, 'en.exception', '\\bexceptions?\\b'),
  p('debug', 2, 'en.throws', '\\b(?:throws?|thrown)\\b', { requires: ['code'] }),
  p(
    'debug',
    3,
    'en.why-code',
    "\\bwhy (?:does|doesn't|is|isn't|do|did) (?:my|this|the) (?:code|function|script|program|query|test|app|build|method|loop)\\b",
  ),
  p('debug', 1.5, 'any.why-code', '\\b(?:tại sao|vì sao|sao|why)\\b', { strict: true, requires: ['code'] }),
  p(
    'debug',
    3,
    'any.returns-wrong',
    '\\b(?:trả về|returns?|gives?|prints?|outputs?)\\s+(?:undefined|null|nan|none|sai|wrong)\\b',
  ),
  p('debug', 1.5, 'any.undefined', '\\b(?:undefined|null|nan)\\b', { requires: ['code'] }),
  p('debug', 2, 'en.crash', '\\bcrash\\w*\\b'),
  p(
    'debug',
    3,
    'en.fails',
    "\\b(?:fails?|failing|failed) (?:with|to (?:compile|build|run|start))|\\bbuild (?:fails|failed|error)|\\b(?:doesn't|does not|won't|will not|isn't) (?:work|compile|run|build)\\b",
  ),
  p('debug', 3, 'any.error-code', '\\b(?:error )?(?:ts|cs|e)\\d{4,5}\\b'),
  p('debug', 1.5, 'en.error', '\\berrors?\\b'),
  p(
    'debug',
    3,
    'vi.sua-loi',
    '\\b(?:sửa|gỡ|bắt|fix|báo|bị|gặp|xử lý|khắc phục|tìm|dính) (?:lỗi\\b(?! (?:khuyên|nói|dặn|chúc|mời|giải|thoại))|bugs?\\b)',
    { strict: true },
  ),
  p('debug', 1.5, 'vi.loi', '\\blỗi\\b(?! (?:khuyên|nói|dặn|chúc|mời|giải|thoại|cảm ơn|bài hát))', {
    strict: true,
  }),
  p(
    'debug',
    4,
    'vi.khong-chay',
    '\\b(?:không chạy|chạy không được|không hoạt động|không biên dịch được|bị crash|bị treo|bị đơ|văng)\\b',
    { strict: true, requires: ['code'] },
  ),
  p('debug', 1.5, 'vi.loi-code', '\\blỗi\\b', { strict: true, requires: ['code'] }),
  p('debug', 2, 'vi.sua-giup', '\\bsửa (?:giúp|hộ|cho|lại)\\b', { requires: ['code'] }),
  p('debug', -5, 'vi.loi-chinh-ta', '\\blỗi (?:chính tả|ngữ pháp|y khoa|kê đơn|dùng thuốc)\\b', {
    strict: true,
  }),
  p('debug', -5, 'en.medical-error', '\\b(?:spelling|grammar|medical|medication) (?:error|mistake)s?\\b'),

  // ---- patient_sim: role-played patient for training ---------------------------------------------
  p(
    'patient_sim',
    5,
    'vi.benh-nhan-ao',
    '\\b(?:bệnh nhân (?:ảo|giả lập|mô phỏng|giả định)|(?:giả lập|mô phỏng|đóng vai|nhập vai|giả làm|vào vai)(?: làm| một)? (?:bệnh nhân|người bệnh))\\b',
  ),
  p(
    'patient_sim',
    4,
    'vi.ca-benh-mo-phong',
    '\\b(?:mô phỏng (?:một )?ca bệnh|ca bệnh mô phỏng|ca bệnh giả lập)\\b',
  ),
  p(
    'patient_sim',
    3,
    'vi.luyen-hoi-benh',
    '\\bluyện (?:tập )?(?:hỏi bệnh|khám bệnh|khai thác bệnh sử|phỏng vấn)\\b',
  ),
  p(
    'patient_sim',
    4,
    'vi.lam-benh-nhan',
    '\\b(?:hãy|bạn|em|anh|chị)\\s+(?:giả )?làm (?:một )?(?:bệnh nhân|người bệnh)\\b',
  ),
  p('patient_sim', 2, 'vi.hoi-benh', '\\b(?:để|cho) (?:tôi|em|mình) (?:hỏi bệnh|khám)\\b'),
  p('patient_sim', 2, 'vi.dong-vai', '\\b(?:đóng vai|nhập vai)\\b'),
  p(
    'patient_sim',
    5,
    'en.simulated-patient',
    '\\b(?:simulat\\w+|virtual|standardi[sz]ed|mock|fake) patients?\\b|\\b(?:simulate|role[- ]?play|play|act as|pretend (?:to be|you are)) (?:as )?(?:a |the )?patient\\b',
  ),
  p('patient_sim', 3, 'en.role-play', '\\brole[- ]?play\\w*\\b'),
  p('patient_sim', 2, 'en.osce', '\\b(?:osce|history taking|take a history)\\b'),

  // ---- face_recognize ----------------------------------------------------------------------------
  p(
    'face_recognize',
    4,
    'vi.nhan-dien-mat',
    '\\bnhận (?:diện|dạng|ra) (?:khuôn mặt|gương mặt|mặt người|người|ai)\\b',
  ),
  p('face_recognize', 3, 'vi.khuon-mat', '\\b(?:khuôn mặt|gương mặt)\\b'),
  p('face_recognize', 3, 'vi.nguoi-trong-anh', `\\b(?:người|ai) (?:ở )?(?:trong|trên) (?:${IMAGE_WORDS})`),
  p('face_recognize', 3, 'vi.danh-tinh', '\\b(?:xác định danh tính|danh tính)\\b'),
  p('face_recognize', 1.5, 'vi.la-ai', '\\blà ai\\b', { strict: true }),
  p('face_recognize', 3, 'vi.ai-day', '^\\W*(?:ai|người này|đây) (?:đây|thế|vậy|kia|là ai)\\W*$', {
    strict: true,
    requires: ['image'],
  }),
  p(
    'face_recognize',
    4,
    'en.face-recognition',
    '\\b(?:face|facial) (?:recognition|detection|match\\w*|id)\\b',
  ),
  p(
    'face_recognize',
    4,
    'en.recognize-person',
    '\\b(?:recogni[sz]e|identify|detect|find)\\s+(?:the |this |these |all |any )?(?:faces?|persons?|people|man|woman|individuals?)\\b',
  ),
  p(
    'face_recognize',
    4,
    'en.who-in-photo',
    `\\bwho(?: is|'s| are)? (?:in |on )?(?:this|that|these|the) (?:${IMAGE_WORDS})`,
  ),
  p(
    'face_recognize',
    4,
    'en.person-in-photo',
    `\\b(?:man|woman|person|people|guy|lady|boy|girl|men|women|someone|anyone)\\s+(?:in|on)\\s+(?:this|the|that|my)\\s+(?:${IMAGE_WORDS})`,
  ),
  p('face_recognize', 3, 'en.who-is-this', "\\bwho(?: is|'s) (?:this|that)\\b", { requires: ['image'] }),
  p('face_recognize', 2, 'en.is-this-person', '\\bis (?:this|that) (?:person|man|woman|guy)\\b'),
  p('face_recognize', 2, 'en.face', '\\bfaces?\\b'),
  p(
    'face_recognize',
    -4,
    'en.my-face',
    "\\b(?:my|his|her|their|the patient's) face\\b|\\bface ?masks?\\b",
    {},
  ),

  // ---- shell: commands on the server -------------------------------------------------------------
  p('shell', 4, 'vi.chay-lenh', '\\b(?:chạy|thực thi|thực hiện|gõ)\\s+(?:câu |dòng )?(?<!y )lệnh\\b', {
    strict: true,
  }),
  p('shell', 2, 'vi.lenh', '\\b(?:câu lệnh|dòng lệnh|(?<!y )lệnh)\\b', { strict: true }),
  p(
    'shell',
    4,
    'en.run-command',
    '\\b(?:run|execute|exec)\\s+(?:the |this |a |that )?(?:command|cmd)\\b|\\b(?:in|on|from) the (?:shell|terminal|command line|server)\\b|\\bcommand line\\b',
  ),
  p(
    'shell',
    2.5,
    'any.run-code',
    '\\b(?:chạy|run|execute)\\s+(?:thử |this |the |my )?(?:đoạn )?(?:code|script|chương trình|program)\\b',
  ),
  p('shell', 2, 'any.terminal', '\\b(?:terminal|shell|bash|console(?!\\.)|sudo)\\b'),
  p(
    'shell',
    5,
    'any.bare-command',
    // Each argument reads one way only, else a character that fails the match after many arguments
    // makes the search try every reading of each (exponential in their number): an option is one
    // dash and option characters, dashes included (one or two dashes before them would read `--s`
    // two ways); a path-like argument runs to its first / . * or ~ without one, then on with any
    // path characters (a run on each side of any of them would read `........` eight ways).
    '^\\s*(?:sudo\\s+)?(?:ls|df|du|pwd|uname|uptime|free|nvidia-smi|whoami|date|ps|top|hostname)(?:\\s+(?:-[\\w=-]+|[\\w-]*[/.*~][\\w~./*-]*|\\d+))*\\s*$',
  ),
  p(
    'shell',
    4,
    'any.file-command',
    '^\\s*(?:sudo\\s+)?(?:cat|head|tail|grep|wc|sort|uniq|stat|echo|find|ls|du|df)\\s+\\S*[-/.*]',
  ),
  p('shell', 3, 'any.command-with-flags', '\\b(?:ls|df|du|nvidia-smi|uname|ps|free)\\s+-{1,2}\\w'),
  p('shell', 3, 'any.nvidia-smi', '\\b(?:nvidia-smi|uptime|hostname)\\b'),
  p(
    'shell',
    3,
    'vi.system-info',
    '\\b(?:dung lượng (?:ổ |bộ )?(?:đĩa|cứng|nhớ)|ổ đĩa|ổ cứng|bộ nhớ (?:ram )?(?:còn trống|còn lại|đang dùng|sử dụng)|tiến trình (?:đang chạy|hệ thống)|liệt kê (?:các |những |tất cả )?(?:file|tệp|thư mục)|thư mục (?:hiện tại|làm việc))\\b',
  ),
  p(
    'shell',
    3,
    'any.resource-usage',
    '\\b(?:ram|cpu|gpu|bộ nhớ|ổ đĩa|ổ cứng|disk|memory)\\b.{0,20}\\b(?:còn trống|còn lại|đang dùng|sử dụng|nhiệt độ|usage|free|temperature|left)\\b',
  ),
  p(
    'shell',
    4,
    'any.run-program',
    '\\b(?:run|execute|chạy|thực thi)\\s+(?:lệnh |the )?(?:ls|df|du|pwd|uname|uptime|free|nvidia-smi|whoami|cat|head|tail|grep|wc|date|ps|stat)\\b',
  ),
  p(
    'shell',
    3,
    'en.system-info',
    '\\b(?:disk (?:usage|space)|free (?:memory|disk|space)|(?:memory|ram|cpu|gpu) (?:usage|utili[sz]ation)|running processes|list (?:the |all )?files|current (?:directory|folder)|working directory|workdir|log files?)\\b',
  ),
];
