// Which instruction-tuned GGUF answers clinical questions best: 16 short questions, 8 in English
// and the same 8 cases in Vietnamese (textbook vignettes, a first-line drug, a note to summarise),
// each scored right when the answer names the expected term (any of a few spellings). Greedy, one
// chat per question, the model's own chat template, 2 threads; prints every answer, the score per
// language, and tokens/s of generation including the prompt.
// Run by hand: `npm run bench:llm-models -- a.gguf b.gguf …` (default: the manifest's `llm`).
// ~2 min per 1.5B model on 2 cores. The figures in services/llm/README.md ("Default model") are its.
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { getLlama, LlamaChatSession } from 'node-llama-cpp';
import { MODEL_MANIFEST, defaultModelsDir, resolveModelPath } from '@clinicalsuite/kit/models';

const SYSTEM = 'You are a careful clinical assistant. Answer briefly and accurately.';
// [language, question, terms of which one must appear in the answer, lowercased]
const QUESTIONS = [
  [
    'en',
    'Fever for 2 days, cough with rusty sputum, pleuritic chest pain, crackles at the right lung base, SpO2 92%. What is the most likely diagnosis? One line.',
    ['pneumonia'],
  ],
  [
    'en',
    'Six weeks of cough, evening fevers, 5 kg weight loss, night sweats and coughing up blood. Most likely diagnosis? One line.',
    ['tuberculosis', ' tb'],
  ],
  [
    'en',
    'Periumbilical pain that moved to the right lower quadrant, nausea, 38.2 °C, rebound tenderness. Most likely diagnosis? One line.',
    ['appendicitis'],
  ],
  [
    'en',
    'A 60-year-old smoker has crushing central chest pain radiating to the left arm with sweating for 30 minutes. Most likely diagnosis? One line.',
    ['myocardial infarction', 'heart attack', 'acute coronary', 'stemi'],
  ],
  [
    'en',
    'Sudden facial droop, arm weakness and slurred speech for 40 minutes. What is the emergency diagnosis? One line.',
    ['stroke'],
  ],
  ['en', 'What is the first-line drug for type 2 diabetes in most adults? One word.', ['metformin']],
  [
    'en',
    'A child has had high fever for 3 days, abdominal pain, bleeding gums, petechiae, in an area with outbreaks. What disease? One line.',
    ['dengue'],
  ],
  [
    'en',
    'Summarise in one sentence: "Pt 67F, T2DM on metformin, HbA1c 8.9%, c/o polyuria. Plan: add empagliflozin 10 mg, recheck in 3 months."',
    ['empagliflozin'],
  ],
  [
    'vi',
    'Bệnh nhân sốt 2 ngày, ho đờm màu gỉ sắt, đau ngực kiểu màng phổi, ran nổ đáy phổi phải. Chẩn đoán có khả năng nhất? Trả lời một dòng bằng tiếng Việt.',
    ['viêm phổi'],
  ],
  [
    'vi',
    'Ho kéo dài 6 tuần, sốt về chiều, sụt 5 kg, đổ mồ hôi đêm, ho ra máu. Chẩn đoán có khả năng nhất? Trả lời một dòng bằng tiếng Việt.',
    ['lao'],
  ],
  [
    'vi',
    'Đau quanh rốn rồi khu trú hố chậu phải, buồn nôn, sốt 38,2 độ, phản ứng dội. Chẩn đoán có khả năng nhất? Trả lời một dòng bằng tiếng Việt.',
    ['viêm ruột thừa'],
  ],
  [
    'vi',
    'Nam 60 tuổi hút thuốc, đau thắt ngực dữ dội lan tay trái, vã mồ hôi 30 phút. Chẩn đoán có khả năng nhất? Trả lời một dòng bằng tiếng Việt.',
    ['nhồi máu cơ tim', 'hội chứng vành cấp'],
  ],
  [
    'vi',
    'Đột ngột méo miệng, yếu tay, nói khó 40 phút. Chẩn đoán cấp cứu là gì? Trả lời một dòng bằng tiếng Việt.',
    ['đột quỵ', 'tai biến mạch máu não'],
  ],
  ['vi', 'Thuốc đầu tay điều trị đái tháo đường type 2 ở người lớn là gì? Trả lời một từ.', ['metformin']],
  [
    'vi',
    'Trẻ sốt cao 3 ngày, đau bụng, chảy máu chân răng, chấm xuất huyết dưới da, vùng có dịch. Bệnh gì? Trả lời một dòng bằng tiếng Việt.',
    ['sốt xuất huyết', 'dengue'],
  ],
  [
    'vi',
    'Tóm tắt trong một câu bằng tiếng Việt: "Bệnh nhân nữ 67 tuổi, đái tháo đường type 2, HbA1c 8,9%, tiểu nhiều. Kế hoạch: thêm empagliflozin 10 mg, tái khám sau 3 tháng."',
    ['empagliflozin'],
  ],
];

async function score(llama, path) {
  const model = await llama.loadModel({ modelPath: path });
  const right = { en: 0, vi: 0 };
  let tokens = 0;
  let seconds = 0;
  console.log(`\n== ${basename(path)} (${model.fileInfo.metadata.general.name ?? 'unnamed'})`);
  for (const [lang, question, terms] of QUESTIONS) {
    const context = await model.createContext({ contextSize: 1024, threads: 2 });
    const session = new LlamaChatSession({ contextSequence: context.getSequence(), systemPrompt: SYSTEM });
    const started = performance.now();
    let generated = 0;
    const answer = (
      await session.prompt(question, {
        maxTokens: 80,
        temperature: 0,
        onToken: (t) => (generated += t.length),
      })
    ).trim();
    seconds += (performance.now() - started) / 1000;
    tokens += generated;
    const ok = terms.some((t) => answer.toLowerCase().includes(t));
    if (ok) right[lang]++;
    console.log(`${ok ? 'right' : 'wrong'} [${lang}] ${answer.replace(/\s+/g, ' ').slice(0, 160)}`);
    await context.dispose();
  }
  await model.dispose();
  return { right, tokensPerSecond: tokens / seconds };
}

const paths = process.argv.slice(2);
if (paths.length === 0) paths.push(resolveModelPath(defaultModelsDir(), MODEL_MANIFEST['llm']));
for (const p of paths) {
  if (!existsSync(p)) {
    console.error(`${p} is absent (the default: npm run models -- fetch llm)`);
    process.exit(2);
  }
}
const llama = await getLlama({ gpu: false, maxThreads: 2 });
const results = [];
for (const p of paths) results.push([basename(p), await score(llama, p)]);
const perLanguage = QUESTIONS.length / 2;
console.log('\nmodel | English right | Vietnamese right | generation tok/s (prompt included)');
for (const [name, r] of results)
  console.log(
    `${name} | ${r.right.en}/${perLanguage} | ${r.right.vi}/${perLanguage} | ${r.tokensPerSecond.toFixed(1)}`,
  );
await llama.dispose();
