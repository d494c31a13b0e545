import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  DISCLAIMERS,
  MAX_SELECTED_CODES,
  codeQueries,
  codeSelectionMessages,
  codeSelectionSchema,
  cutCodePoints,
  documentBudgetBytes,
  documentMessages,
  fitText,
  mergeCandidates,
  parseCodeSelection,
  type CodeCandidate,
} from '../../services/agent/src/domain/pipelines.js';
import type { CodesearchTestServer } from '../codesearch/helpers.js';
import { startLlm, type LlmTestServer } from '../llm/helpers.js';
import { startOcr, type OcrTestServer } from '../ocr/helpers.js';
import { EN_NOTE, VI_NOTE, characterAccuracy, renderNote } from '../ocr/pages.js';
import { startStt, type SttTestServer } from '../stt/helpers.js';
import { wordErrorRate } from '../stt/fixtures.js';
import { readWav, startTts, type TtsTestServer } from '../tts/helpers.js';
import { startAgent, type AgentTestServer } from './helpers.js';
import {
  ICD_SLICE,
  agentForm,
  librivoxSpeech,
  llmReset,
  llmSays,
  metricValue,
  silentWav,
  startCodesearchSlice,
  type Speech,
} from './subservice-helpers.js';

// The four pipelines over the real sub-services (pocketsphinx, tesseract, espeak-ng, the code search
// on a real ICD-10-CM slice) and the real text LLM (tiny generated model, greedy): every LLM text in
// a response is compared with what the LLM itself answers to the same prompt. Then the pure pieces
// (prompts, queries, candidates, reading the model's choice) on their own.

const MAX_TOKENS = 32;
// The code choice's JSON closes within this on the tiny model, whose reasons run to the schema's 200
// characters (a separate agent runs the image-to-codes pipeline with it).
const CODES_MAX_TOKENS = 1200;

interface Step {
  name: string;
  ms: number;
  subservice: string | null;
  model: string | null;
  skipped: boolean;
  detail: string | null;
}

interface PipelineBody {
  pipeline: string;
  intent: string;
  model: string | null;
  language: string;
  steps: Step[];
  processing_time_ms: number;
  disclaimer: string;
  truncated: boolean;
}

let llm: LlmTestServer;
let stt: SttTestServer;
let ocr: OcrTestServer;
let tts: TtsTestServer;
let codes: CodesearchTestServer;
let agent: AgentTestServer;
let speech: { short: Speech; long: Speech };
let enNote: Buffer;
let viNote: Buffer;

beforeAll(async () => {
  [speech, enNote, viNote] = await Promise.all([librivoxSpeech(), renderNote(EN_NOTE), renderNote(VI_NOTE)]);
  [llm, stt, ocr, tts, codes] = await Promise.all([
    // One sequence: see llmReset.
    startLlm({ MAX_CONCURRENCY: '1' }),
    startStt({ MAX_CONCURRENCY: '1' }),
    startOcr({ MAX_CONCURRENCY: '1' }),
    startTts(),
    startCodesearchSlice(),
  ]);
  agent = await startAgent({
    LLM_URL: llm.url,
    STT_URL: stt.url,
    OCR_URL: ocr.url,
    TTS_URL: tts.url,
    CODE_SEARCH_URL: codes.url,
    AGENT_MAX_TOKENS: String(MAX_TOKENS),
  });
}, 120_000);

afterAll(async () => {
  await agent.close();
  await Promise.all([stt.close(), ocr.close(), tts.close(), codes.close()]);
  await llm.close();
});

const budget = (): number => documentBudgetBytes(agent.config.AGENT_CONTEXT_TOKENS, MAX_TOKENS);
const wav = (s: Speech) => ({ file: { bytes: s.wav, name: s.name, type: 'audio/wav' } });
const png = (bytes: Buffer) => ({ file: { bytes, name: 'note.png', type: 'image/png' } });

function expectTimed(b: PipelineBody, names: string[]): void {
  expect(b.steps.map((s) => s.name)).toEqual(names);
  for (const s of b.steps) {
    expect(s.skipped).toBe(false);
    expect(s.ms).toBeGreaterThan(0);
  }
  const sum = b.steps.reduce((t, s) => t + s.ms, 0);
  expect(b.processing_time_ms).toBeGreaterThanOrEqual(sum);
  expect(b.processing_time_ms).toBeLessThan(sum + 1000);
}

describe('POST /pipeline/audio-to-diagnosis', () => {
  it('transcribes, then the LLM analyses the symptoms; each step timed and observed', async () => {
    await llmReset(llm.url);
    const res = await agentForm<PipelineBody & { transcript: string; analysis: string }>(
      `${agent.url}/pipeline/audio-to-diagnosis`,
      wav(speech.short),
      { language: 'en' },
    );
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b).toMatchObject({
      pipeline: 'audio-to-diagnosis',
      intent: 'analyze',
      model: 'alpha4_service',
      language: 'en',
      disclaimer: DISCLAIMERS.en,
      truncated: false,
    });
    expect(wordErrorRate(speech.short.transcript, b.transcript)).toBeLessThan(0.5);
    const prompt = documentMessages('symptom_analysis', b.transcript, 'en', budget());
    expect(b.analysis).toBe((await llmSays(llm.url, prompt.messages, MAX_TOKENS)).trim());
    expectTimed(b, ['transcribe', 'analysis']);
    expect(b.steps.map((s) => [s.subservice, s.model])).toEqual([
      ['stt', null],
      [null, 'alpha4_service'],
    ]);
    for (const step of ['transcribe', 'analysis']) {
      expect(
        await metricValue(agent.url, 'agent_pipeline_step_duration_seconds_count', {
          pipeline: 'audio-to-diagnosis',
          step,
        }),
      ).toBe(1);
    }
  });

  it('answers 422 for a recording with no speech, after the transcription step', async () => {
    const res = await agentForm(
      `${agent.url}/pipeline/audio-to-diagnosis`,
      { file: { bytes: silentWav(1.5), name: 'silence.wav', type: 'audio/wav' } },
      { language: 'en' },
    );
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.detail)).toMatch(/no speech was recognised/);
  });
});

describe('POST /pipeline/audio-full-consult', () => {
  it('transcribes, the LLM replies, and the reply comes back spoken in audio_base64', async () => {
    await llmReset(llm.url);
    const res = await agentForm<
      PipelineBody & {
        transcript: string;
        text: string;
        audio_base64: string;
        audio: { format: string; sample_rate: number; duration_seconds: number; engine: string };
      }
    >(`${agent.url}/pipeline/audio-full-consult`, wav(speech.short), { language: 'en' });
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b).toMatchObject({ pipeline: 'audio-full-consult', intent: 'chat', model: 'alpha4_service' });
    const prompt = documentMessages('consultation', b.transcript, 'en', budget());
    expect(b.text).toBe((await llmSays(llm.url, prompt.messages, MAX_TOKENS)).trim());
    const audio = readWav(Buffer.from(b.audio_base64, 'base64'));
    expect(audio.sampleRate).toBe(b.audio.sample_rate);
    expect(audio.seconds).toBeCloseTo(b.audio.duration_seconds, 1);
    expect(audio.seconds).toBeGreaterThan(0.3);
    expect(b.audio).toMatchObject({ format: 'wav', engine: 'espeak-ng' });
    expectTimed(b, ['transcribe', 'consultation', 'tts']);
    expect(b.steps.map((s) => s.subservice)).toEqual(['stt', null, 'tts']);
  });

  it('answers 503 naming TTS_URL before any work when the tts service is not configured', async () => {
    const noTts = await startAgent({ LLM_URL: llm.url, STT_URL: stt.url }, { waitReady: false });
    try {
      const res = await agentForm(`${noTts.url}/pipeline/audio-full-consult`, wav(speech.short), {
        language: 'en',
      });
      expect(res.status).toBe(503);
      expect(res.body.detail).toMatch(/\(tts\) is not configured: set TTS_URL/);
      expect(
        await metricValue(noTts.url, 'agent_subservice_request_duration_seconds_count', {
          subservice: 'stt',
        }),
      ).toBe(0);
    } finally {
      await noTts.close();
    }
  });
});

describe('POST /pipeline/image-to-codes', () => {
  let codesAgent: AgentTestServer;
  beforeAll(async () => {
    codesAgent = await startAgent({
      LLM_URL: llm.url,
      OCR_URL: ocr.url,
      CODE_SEARCH_URL: codes.url,
      AGENT_MAX_TOKENS: String(CODES_MAX_TOKENS),
    });
  });
  afterAll(() => codesAgent.close());

  it('reads the note; the code search proposes codes and the LLM picks only among them', async () => {
    await llmReset(llm.url);
    const res = await agentForm<
      PipelineBody & {
        text: string;
        codes: { code: string; type: string; title: string; reason: string }[];
        candidates: { code: string; type: string; title: string; rank: number; queries: number[] }[];
        discarded: string[];
        selection_error: string | null;
        queries: string[];
        code_types: string[];
        missing_types: string[];
      }
    >(`${codesAgent.url}/pipeline/image-to-codes`, png(viNote), { language: 'vi' });
    expect(res.status).toBe(200);
    const b = res.body;
    expect(characterAccuracy(VI_NOTE.join('\n'), b.text)).toBeGreaterThanOrEqual(0.98);
    expect(b).toMatchObject({ pipeline: 'image-to-codes', intent: 'search_code', model: 'alpha4_service' });
    expect(b.code_types).toEqual(['ICD10']);
    expect(b.missing_types).toEqual(['ICPC2']);
    expect(b.queries).toEqual(expect.arrayContaining(['tăng huyết áp 10 năm', 'đái tháo đường típ 2']));
    const slice = new Set(ICD_SLICE.map(([c]) => c));
    const candidates = b.candidates.map((c) => c.code);
    expect(candidates).toContain('I10');
    for (const c of b.candidates) {
      expect(slice.has(c.code)).toBe(true);
      for (const q of c.queries) expect(q).toBeLessThan(b.queries.length);
    }
    // The model's choice: only candidates, ever; what it answered is what the LLM says to the same prompt.
    for (const c of b.codes) expect(candidates).toContain(c.code);
    expect(b.codes.length).toBeLessThanOrEqual(MAX_SELECTED_CODES);
    const byRef = b.candidates.map((c) => ({
      ...c,
      ref: `${c.type}:${c.code}`,
    })) as unknown as CodeCandidate[];
    const prompt = codeSelectionMessages(
      b.text,
      byRef,
      'vi',
      documentBudgetBytes(codesAgent.config.AGENT_CONTEXT_TOKENS, CODES_MAX_TOKENS),
    );
    const reply = await llmSays(llm.url, prompt.messages, CODES_MAX_TOKENS, {
      type: 'json_schema',
      json_schema: { name: 'code_selection', schema: codeSelectionSchema(byRef) },
    });
    const expected = parseCodeSelection(reply, byRef);
    // The tiny model's JSON closes within CODES_MAX_TOKENS: a real choice was read.
    expect(b.selection_error).toBeNull();
    expect(b.codes.length).toBeGreaterThan(0);
    expect(b.selection_error).toBe(expected.error);
    expect(b.codes.map((c) => [c.code, c.reason])).toEqual(
      expected.selected.map((s) => [s.candidate.code, s.reason]),
    );
    expect(b.discarded).toEqual([]);
    expectTimed(b, ['ocr', 'code_search', 'code_selection']);
    expect(b.steps.map((s) => s.subservice)).toEqual(['ocr', 'codesearch', null]);
  });
});

describe('POST /pipeline/image-full-analysis', () => {
  it('reads the note, then the LLM analyses it in detail', async () => {
    await llmReset(llm.url);
    const res = await agentForm<PipelineBody & { text: string; analysis: string; mean_confidence: number }>(
      `${agent.url}/pipeline/image-full-analysis`,
      png(enNote),
      { language: 'en' },
    );
    expect(res.status).toBe(200);
    const b = res.body;
    expect(characterAccuracy(EN_NOTE.join('\n'), b.text)).toBeGreaterThanOrEqual(0.98);
    expect(b.mean_confidence).toBeGreaterThan(0.8);
    expect(b).toMatchObject({ pipeline: 'image-full-analysis', intent: 'analyze', model: 'alpha4_service' });
    const prompt = documentMessages('detailed_analysis', b.text, 'en', budget());
    expect(b.analysis).toBe((await llmSays(llm.url, prompt.messages, MAX_TOKENS)).trim());
    expectTimed(b, ['ocr', 'analysis']);
  });

  it('answers 422 for an image with no text', async () => {
    const res = await agentForm(`${agent.url}/pipeline/image-full-analysis`, png(await renderNote([])), {
      language: 'en',
    });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.detail)).toMatch(/no text was found/);
  });
});

describe('pipeline domain (pure)', () => {
  const hit = (code: string, score = 1, type = 'ICD10') => ({
    code,
    type,
    title: `title ${code}`,
    title_vi: null,
    title_en: `title ${code}`,
    score,
  });

  it('cuts documents at a line or word break within the byte budget, never inside a character', () => {
    const text = 'Tăng huyết áp '.repeat(50);
    const fitted = fitText(text, 100);
    expect(fitted.truncated).toBe(true);
    expect(Buffer.byteLength(fitted.text)).toBeLessThanOrEqual(100);
    expect(text.startsWith(fitted.text)).toBe(true);
    expect(text[fitted.text.length]).toBe(' '); // cut between words
    expect(fitText('short', 100)).toEqual({ text: 'short', truncated: false });
    expect(cutCodePoints('a😀b', 2)).toBe('a😀');
    const prompt = documentMessages('detailed_analysis', 'x '.repeat(500), 'vi', 300);
    expect(prompt.truncated).toBe(true);
    expect(prompt.messages[1]!.content).toMatch(/<van_ban>\n[\s\S]*\n<\/van_ban>\n\(Văn bản quá dài/);
    expect(prompt.messages[0]!.content).toMatch(/tiếng Việt/);
    expect(documentMessages('consultation', 'hi', 'en', 300).messages[0]!.content).toMatch(
      /Do not add facts/,
    );
  });

  it('makes code-search queries of lines and clauses, without labels, duplicates or noise', () => {
    const q = codeQueries(
      'Tiền sử: tăng huyết áp 10 năm, đái tháo đường típ 2\nNhiệt độ 38,6 độ\n- \nTĂNG HUYẾT ÁP 10 NĂM; ho',
      10,
      200,
    );
    expect(q).toEqual(['tăng huyết áp 10 năm', 'đái tháo đường típ 2', 'Nhiệt độ 38,6 độ']);
    expect(codeQueries('a b c\nxy', 10, 200)).toEqual([]);
    expect(
      codeQueries(Array.from({ length: 40 }, (_, i) => `line number ${i}`).join('\n'), 5, 200),
    ).toHaveLength(5);
  });

  it('merges the queries’ answers into distinct candidates, best rank first', () => {
    const merged = mergeCandidates(
      [
        { query: 'a', results: [hit('R05', 3), hit('I10', 2)] },
        { query: 'b', results: [hit('I10', 9), hit('E11', 1)] },
        { query: 'c', results: [hit('E11', 1, 'ICPC2')] },
      ],
      10,
    );
    expect(merged.map((c) => [c.ref, c.rank, c.queries, c.score])).toEqual([
      // Both first in a query and first found by query 0: the better score first.
      ['ICD10:I10', 1, [0, 1], 9],
      ['ICD10:R05', 1, [0], 3],
      ['ICPC2:E11', 1, [2], 1],
      ['ICD10:E11', 2, [1], 1],
    ]);
    expect(mergeCandidates([{ query: 'a', results: [hit('A'), hit('B'), hit('C')] }], 2)).toHaveLength(2);
  });

  it('keeps only candidates from the model’s choice, and lists what else it named', () => {
    const candidates = mergeCandidates(
      [{ query: 'q', results: [hit('I10'), hit('E11.9'), hit('K86', 1, 'ICPC2'), hit('K86')] }],
      10,
    );
    const schema = codeSelectionSchema(candidates) as {
      properties: { codes: { maxItems: number; items: { properties: { code: { enum: string[] } } } } };
    };
    expect(schema.properties.codes.items.properties.code.enum).toEqual([
      'ICD10:I10',
      'ICD10:E11.9',
      'ICPC2:K86',
      'ICD10:K86',
    ]);
    expect(schema.properties.codes.maxItems).toBe(MAX_SELECTED_CODES);
    const chosen = parseCodeSelection(
      JSON.stringify({
        codes: [
          { code: 'ICD10:I10', reason: 'tăng huyết áp' },
          { code: 'E119', reason: 'no dot, no type: still one candidate' },
          { code: 'K86', reason: 'two candidates have it: ambiguous' },
          { code: 'Z99.9', reason: 'invented' },
          { code: 'icd10:i10', reason: 'twice' },
        ],
      }),
      candidates,
    );
    expect(chosen.error).toBeNull();
    expect(chosen.selected.map((s) => [s.candidate.ref, s.reason])).toEqual([
      ['ICD10:I10', 'tăng huyết áp'],
      ['ICD10:E11.9', 'no dot, no type: still one candidate'],
    ]);
    expect(chosen.discarded).toEqual(['K86', 'Z99.9']);
    expect(parseCodeSelection('{"codes": [{"code": "ICD10:I1', candidates)).toMatchObject({
      selected: [],
      error: expect.stringMatching(/JSON/),
    });
    expect(parseCodeSelection('```json\n{"codes": []}\n```', candidates)).toEqual({
      selected: [],
      discarded: [],
      error: null,
    });
    expect(parseCodeSelection('{"other": 1}', candidates).error).toMatch(/codes/);
  });
});
