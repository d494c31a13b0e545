import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { statedTargetLanguage } from '../../services/agent/src/domain/intent/translate-target.js';

// The target language a translate message states (null: none, the request's `language` applies).
// Every translate row of the intent table (intent-table.json) is here with the target it names.

const TARGETS: Readonly<Record<string, string | null>> = {
  'Dịch sang tiếng Anh: Bệnh nhân bị sốt cao ba ngày': 'en',
  'dich sang tieng anh: toi bi dau dau': 'en',
  'Translate to Vietnamese: The patient has a history of asthma.': 'vi',
  'Translate this discharge summary into English': 'en',
  '“Đau bụng” tiếng Anh là gì?': 'en',
  "How do you say 'shortness of breath' in Vietnamese?": 'vi',
  'Dịch đoạn văn sau sang tiếng Việt: The wound should be kept dry.': 'vi',
  'Bạn dịch giúp tôi câu này sang tiếng Pháp': 'fr',
  "translate 'viêm phế quản' to English": 'en',
  'Chuyển đoạn này sang tiếng Anh giúp mình': 'en',
  'dich giup toi doan nay': null,
  'Dịch chú thích trong code sang tiếng Việt': 'vi',
  "What's the English word for 'đau nửa đầu'?": 'en',
  'Dịch câu sau sang tiếng Anh: uống thuốc sau ăn': 'en',
  "Translate 'chronic kidney disease' into Vietnamese": 'vi',
  'dich cau nay sang tieng viet: take one tablet daily': 'vi',
  "How do you say 'thuốc kháng sinh' in English?": 'en',
  'Dịch giúp mình đơn thuốc này sang tiếng Anh': 'en',
  'Please translate the consent form': null,
  "'Shortness of breath' nghĩa tiếng Việt là gì?": 'vi',
  'Put this sentence into English: bệnh nhân cần nhịn ăn': 'en',
  'Dịch sang tiếng Việt: Take with food': 'vi',
  "Bản dịch tiếng Anh của 'nhồi máu cơ tim' là gì?": 'en',
  'translate into english please: em bé bị sốt': 'en',
};

describe('statedTargetLanguage', () => {
  it('reads the target of every translate row of the intent table', () => {
    const table = JSON.parse(readFileSync(new URL('intent-table.json', import.meta.url), 'utf8')) as {
      message: string;
      expected: string;
    }[];
    const rows = table.filter((r) => r.expected === 'translate').map((r) => r.message);
    expect(rows.length).toBeGreaterThanOrEqual(20);
    const got = Object.fromEntries(rows.map((m) => [m, statedTargetLanguage(m)]));
    const expected = Object.fromEntries(rows.map((m) => [m, TARGETS[m]]));
    expect(got).toEqual(expected);
  });

  it.each([
    // The instruction's target, not a language the text to translate mentions.
    ['Dịch sang tiếng Anh: bệnh nhân chỉ nói tiếng Pháp', 'en'],
    ['Translate into Vietnamese: the patient speaks English only', 'vi'],
    // From one language into another: the target.
    ['Dịch từ tiếng Anh sang tiếng Việt: chest pain', 'vi'],
    ['translate from Vietnamese to English: đau ngực', 'en'],
    // "bằng tiếng Pháp" describes the source here; "sang tiếng Việt" is the target.
    ['Dịch đoạn văn bằng tiếng Pháp sau sang tiếng Việt', 'vi'],
    ['Dịch bằng tiếng Anh giúp tôi: sốt cao', 'en'],
    ['DỊCH SANG TIẾNG NHẬT: đau đầu', 'ja'],
    ['dịch\u00a0sang  tiếng   Anh: ho', 'en'],
    ['Dịch sang tiếng Anh: ho'.normalize('NFD'), 'en'],
    ['dịch đoạn này', null],
    ['tiếng Anh', null],
    // Only the instruction part (before ':' or a line break) states the target: a language named
    // in the text to translate is not one, so the request's language applies.
    ['Dịch giúp tôi: The patient was referred to English-speaking staff.', null],
    ['Dịch giúp tôi ghi chú này: The note was written in English by the night nurse.', null],
    ['Dịch: Patient was transferred to French Hospital', null],
    ['Translate: patient speaks to English doctors only', null],
    ['dịch đoạn này: bệnh nhân chuyển sang tiếng Anh khi nói chuyện với bác sĩ', null],
    ['Dịch đoạn sau: Bệnh nhân nói tiếng Anh, cần phiên dịch.', null],
    ['dịch: bệnh nhân ra tiếng Anh', null],
    ['Translate the following note\nPatient is Thai, speaks Lao', null],
    ['Translate to Vietnamese: the patient was referred to English-speaking staff', 'vi'],
    ['Dịch sang tiếng Anh\nbệnh nhân chuyển sang tiếng Pháp', 'en'],
    // "X-speaking", "Frenchman" are not language names.
    ['Translate the note of a patient referred to English-speaking staff', null],
    ['Translate the letter to Frenchman Dr. Roux', null],
    // Without ':' or a line break, the first 80 characters are the instruction.
    [`Translate this ${'very '.repeat(20)}long note in English`, null],
    // "Hán" is Chinese, "Hàn" Korean; "han" without its diacritic could be either.
    ['Dịch sang tiếng Hán: đau bụng', 'zh'],
    ['Dịch sang tiếng Hàn: đau bụng', 'ko'],
    ['DỊCH SANG TIẾNG HÀN QUỐC: đau bụng', 'ko'],
    ['dich sang tieng han quoc: dau bung', 'ko'],
    ['dich sang tieng han: dau bung', null],
    ['Dịch sang tiếng Hán: đau bụng'.normalize('NFD'), 'zh'],
  ])('%s -> %s', (message, target) => {
    expect(statedTargetLanguage(message)).toBe(target);
  });

  it('reads the instruction within the first 400 characters (MAX_INSTRUCTION_CHARS) only', () => {
    expect(statedTargetLanguage(`${'rất '.repeat(100)}dịch sang tiếng Anh: đau bụng`)).toBeNull();
    expect(statedTargetLanguage(`Dịch sang tiếng Anh: ${'đau bụng '.repeat(100_000)}`)).toBe('en');
  });
});
