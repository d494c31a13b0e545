import { describe, expect, it } from '@jest/globals';
import {
  CERTAINTY,
  contextOf,
  CUE_DEFINITIONS,
  findCues,
} from '../../services/reasoning/src/extract/index.js';

// The context pass on spans given directly (as the LLM extractor gives them): negation,
// pseudo-triggers, termination, uncertainty, history and family, in vi and en.

/** The context of the `nth` occurrence of `term` in `text`. */
function ctx(text: string, term: string, nth = 0) {
  let at = -1;
  for (let i = 0; i <= nth; i++) at = text.indexOf(term, at + 1);
  if (at < 0) throw new Error(`"${term}" is not in "${text}"`);
  return contextOf(text, { start: at, end: at + term.length });
}

const reading = (text: string, term: string, nth = 0): [boolean, number] => {
  const c = ctx(text, term, nth);
  return [c.present, c.certainty];
};

describe('certainty values', () => {
  it('are three documented levels', () => {
    expect(CERTAINTY).toEqual({ stated: 1, probable: 0.75, possible: 0.5 });
  });
});

describe('negation', () => {
  it.each([
    ['không sốt', 'sốt'],
    ['khong sot', 'sot'],
    ['KHÔNG SỐT', 'SỐT'],
    ['Bệnh nhân chưa có sốt', 'sốt'],
    ['phủ nhận đau ngực', 'đau ngực'],
    ['denies chest pain', 'chest pain'],
    ['no fever', 'fever'],
    ['without chills', 'chills'],
    ['negative for pneumonia', 'pneumonia'],
    ['ruled out pulmonary embolism', 'pulmonary embolism'],
    ['pulmonary embolism was ruled out', 'pulmonary embolism'],
    ['Dengue NS1 âm tính', 'Dengue NS1'],
    ['Sốt: không', 'Sốt'],
    ['Phản ứng màng não (-)', 'Phản ứng màng não'],
    ['No other symptoms such as cough, fever or rash.', 'rash'],
    ['No other symptoms like fever', 'fever'],
  ])('"%s": %s is absent', (text, term) => {
    expect(reading(text, term)).toEqual([false, 1]);
  });

  it('names the cue that negated, with its offsets in the input', () => {
    const text = 'Bệnh nhân không sốt.';
    expect(ctx(text, 'sốt').cues).toEqual([{ role: 'negation', text: 'không', start: 10, end: 15 }]);
  });

  it('negates a span that starts with its trigger (an LLM span "không sốt")', () => {
    expect(contextOf('Hôm nay không sốt.', { start: 8, end: 17 }).present).toBe(false);
  });

  it('does not take "nó" (it) for the English "no", nor "cơ thể" (the body) for "có thể" (may)', () => {
    expect(reading('nó ho nhiều', 'ho')).toEqual([true, 1]);
    expect(reading('nhiệt độ cơ thể tăng', 'tăng')).toEqual([true, 1]);
    expect(reading('co the tang', 'tang')).toEqual([true, 0.5]);
  });
});

describe('scope', () => {
  it.each([
    ['Không sốt nhưng ho nhiều.', 'ho'],
    ['Không sốt, tuy nhiên ho nhiều.', 'ho'],
    ['No fever but cough.', 'cough'],
    ['No fever; however, cough.', 'cough'],
    ['Không sốt. Ho nhiều.', 'Ho'],
    ['Không sốt\nHo nhiều', 'Ho'],
    ['Không sốt, ho nhiều.', 'ho'],
    ['Không sốt có ho.', 'ho'],
    ['Không sốt, bệnh nhân ho nhiều.', 'ho'],
    ['No fever. Cough present.', 'Cough'],
  ])('"%s": the negation ends before %s', (text, term) => {
    expect(reading(text, term)).toEqual([true, 1]);
  });

  it('reaches over commas in an "or" list and after a list trigger', () => {
    expect(reading('Không ho, sốt hay khó thở.', 'khó thở')).toEqual([false, 1]);
    expect(reading('No fever, chills, or night sweats.', 'chills')).toEqual([false, 1]);
    expect(reading('Denies fever, chills, night sweats.', 'night sweats')).toEqual([false, 1]);
    expect(reading('Phủ nhận sốt, ho, khó thở.', 'khó thở')).toEqual([false, 1]);
  });

  it('ends after a window of words', () => {
    expect(reading('không thấy có gì bất thường ở vùng cổ và vai ngoài đau lưng', 'đau lưng')[0]).toBe(true);
    expect(reading('không bao giờ bị đau lưng', 'đau lưng')[0]).toBe(false);
  });

  it('does not end a sentence at a decimal point', () => {
    expect(reading('Không sốt 37.5 độ kèm rét run', 'rét run')[0]).toBe(false);
  });

  it('reaches back only a few words, and not past a sentence end', () => {
    expect(reading('Ho nhiều. Xét nghiệm âm tính.', 'Ho')).toEqual([true, 1]);
    expect(reading('Tràn dịch màng phổi (-)', 'Tràn dịch màng phổi')).toEqual([false, 1]);
  });
});

describe('pseudo-triggers negate nothing', () => {
  it.each([
    ['Sốt không rõ nguyên nhân.', 'Sốt'],
    ['Không rõ sốt hay không.', 'sốt'],
    ['Ho không giảm sau điều trị.', 'Ho'],
    ['Không chỉ sốt mà còn ho.', 'sốt'],
    ['Không ăn uống được.', 'ăn uống'],
    ['Không ngủ được vì ho.', 'ho'],
    ['No change in the rash.', 'rash'],
    ['Not only fever but rash.', 'fever'],
    ['Gram negative rods in sputum.', 'rods'],
    ['Tender anterior cervical nodes, no other lymphadenopathy.', 'lymphadenopathy'],
  ])('"%s": %s is present', (text, term) => {
    expect(reading(text, term)).toEqual([true, 1]);
  });
});

describe('uncertainty', () => {
  it.each([
    ['Nghi sốt xuất huyết.', 'sốt xuất huyết', 0.5],
    ['nghi sot xuat huyet', 'sot xuat huyet', 0.5],
    ['Có thể viêm phổi.', 'viêm phổi', 0.5],
    ['TD sốt xuất huyết Dengue.', 'sốt xuất huyết Dengue', 0.5],
    ['Chưa loại trừ lao phổi.', 'lao phổi', 0.5],
    ['Nghĩ nhiều viêm ruột thừa.', 'viêm ruột thừa', 0.75],
    ['Possible pneumonia.', 'pneumonia', 0.5],
    ['Suspected dengue.', 'dengue', 0.5],
    ['Cannot rule out pulmonary embolism.', 'pulmonary embolism', 0.5],
    ['Probable pneumonia.', 'pneumonia', 0.75],
    ['Findings consistent with pneumonia.', 'pneumonia', 0.75],
    ['Viêm phổi?', 'Viêm phổi', 0.5],
    ['?pneumonia', 'pneumonia', 0.5],
    ['Pneumonia cannot be excluded.', 'Pneumonia', 0.5],
  ])('"%s": %s has certainty %s and stays present', (text, term, certainty) => {
    expect(reading(text, term)).toEqual([true, certainty]);
  });

  it('"unlikely" makes it probably absent', () => {
    expect(reading('Pneumonia unlikely.', 'Pneumonia')).toEqual([false, 0.75]);
    expect(reading('Ít nghĩ viêm màng não.', 'viêm màng não')).toEqual([false, 0.75]);
  });

  it('a hedge ends at a sentence end and at a comma', () => {
    expect(reading('Nghi sốt xuất huyết. Ho nhiều.', 'Ho')).toEqual([true, 1]);
    expect(reading('Possible pneumonia, cough for 3 days.', 'cough')).toEqual([true, 1]);
  });

  it('a hedge is not ended by "có" ("có thể có sốt")', () => {
    expect(reading('Có thể có sốt về chiều.', 'sốt')).toEqual([true, 0.5]);
  });
});

describe('history and family', () => {
  it('marks history over a list to the end of the sentence, not past "nay"', () => {
    const text = 'Tiền sử tăng huyết áp, đái tháo đường, nay sốt.';
    expect(ctx(text, 'đái tháo đường').historical).toBe(true);
    expect(ctx(text, 'sốt').historical).toBe(false);
    expect(ctx('History of asthma. Cough today.', 'Cough').historical).toBe(false);
    expect(ctx('PMH: asthma, COPD', 'COPD').historical).toBe(true);
  });

  it('runs history over bullet lines', () => {
    const text = 'Tiền sử:\n- tăng huyết áp\n- hen phế quản\nHiện tại: ho.';
    expect(ctx(text, 'hen phế quản').historical).toBe(true);
    expect(ctx(text, 'ho.').historical).toBe(false);
  });

  it('"a 2-week history of" is the present illness', () => {
    expect(ctx('A 2-week history of cough.', 'cough').historical).toBe(false);
  });

  it.each([
    ['Mẹ bị tăng huyết áp.', 'tăng huyết áp'],
    ['me bi tang huyet ap', 'tang huyet ap'],
    ['Bố của bệnh nhân mắc đái tháo đường.', 'đái tháo đường'],
    ['Tiền sử gia đình: hen phế quản.', 'hen phế quản'],
    ['Family history of diabetes.', 'diabetes'],
    ['His mother had breast cancer.', 'breast cancer'],
  ])('"%s": %s is a relative\'s', (text, term) => {
    expect(ctx(text, term).family).toBe(true);
  });

  it('the mother as informant is not family history ("mẹ khai bé sốt")', () => {
    expect(ctx('Mẹ khai bé sốt 3 ngày.', 'sốt').family).toBe(false);
    expect(ctx('Người nhà kể bệnh nhân ngất.', 'ngất').family).toBe(false);
  });

  it('history and negation together ("tiền sử: không hút thuốc")', () => {
    const c = ctx('Tiền sử: không hút thuốc.', 'hút thuốc');
    expect([c.present, c.historical]).toEqual([false, true]);
  });
});

describe('the cue lists', () => {
  it('find the longest cue first and never overlap', () => {
    const cues = findCues('Không có sốt, không rõ ho, có thể khó thở; cannot rule out PE.');
    expect(cues.map((c) => [c.text, c.category])).toEqual([
      ['Không có', 'negation'],
      ['không rõ', 'pseudo'],
      ['có thể', 'uncertainty'],
      ['cannot rule out', 'uncertainty'],
    ]);
    for (let i = 1; i < cues.length; i++) expect(cues[i]!.start).toBeGreaterThanOrEqual(cues[i - 1]!.end);
  });

  it('hold no term twice in one category and direction', () => {
    const seen = new Set<string>();
    for (const def of CUE_DEFINITIONS) {
      for (const term of def.terms) {
        const key = `${def.category}/${def.direction ?? 'forward'}/${term.toLowerCase()}`;
        expect(seen.has(key) ? key : '').toBe('');
        seen.add(key);
      }
    }
  });
});
