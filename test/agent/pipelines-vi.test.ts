import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  DISCLAIMERS,
  documentBudgetBytes,
  documentMessages,
} from '../../services/agent/src/domain/pipelines.js';
import { MODEL_MANIFEST, ensureModel } from '../../services/kit/src/models/index.js';
import { ensureCorpus, type Utterance } from '../bench/stt/corpus.js';
import { scoreUtterance } from '../bench/stt/scorer.js';
import { CACHE_HOME } from '../fixtures/real-component.js';
import { startLlm, type LlmTestServer } from '../llm/helpers.js';
import { startStt, type SttTestServer } from '../stt/helpers.js';
import { readWav, startTts, type TtsTestServer } from '../tts/helpers.js';
import { startAgent, type AgentTestServer } from './helpers.js';
import { agentForm, llmReset, llmSays } from './subservice-helpers.js';

// The two audio pipelines in Vietnamese on the suite's default speech model: Whisper base fetched
// through the model store (services/stt/README.md), a real Vietnamese recording with its reference
// text (the speech benchmark's set), espeak-ng's Vietnamese voice for the spoken reply, and the
// real text LLM service (tiny generated model, greedy), whose every text in a response is compared
// with what it answers to the same prompt.

const MAX_TOKENS = 32;

let llm: LlmTestServer;
let stt: SttTestServer;
let tts: TtsTestServer;
let agent: AgentTestServer;
let recording: Utterance;

beforeAll(async () => {
  const entry = MODEL_MANIFEST['stt-whisper-base'];
  if (!entry) throw new Error('no manifest entry stt-whisper-base');
  const [model, corpus] = await Promise.all([
    ensureModel(entry, { modelsDir: join(CACHE_HOME, 'models'), retries: 0 }),
    ensureCorpus(['vi']),
  ]);
  // The longest utterance (6 s, a southern voice): 22 words.
  recording = corpus.reduce((a, b) => (b.seconds > a.seconds ? b : a));
  [llm, stt, tts] = await Promise.all([
    startLlm({ MAX_CONCURRENCY: '1' }),
    startStt({ MAX_CONCURRENCY: '1', STT_WHISPER_MODEL: model.path, STT_POCKETSPHINX: 'false' }),
    startTts(),
  ]);
  agent = await startAgent({
    LLM_URL: llm.url,
    STT_URL: stt.url,
    TTS_URL: tts.url,
    AGENT_MAX_TOKENS: String(MAX_TOKENS),
  });
}, 600_000);

afterAll(async () => {
  await agent.close();
  await Promise.all([stt.close(), tts.close()]);
  await llm.close();
});

const budget = (): number => documentBudgetBytes(agent.config.AGENT_CONTEXT_TOKENS, MAX_TOKENS);
const wav = () => ({
  file: { bytes: readFileSync(recording.audio), name: basename(recording.audio), type: 'audio/wav' },
});

/** The transcript is the recording's words: WER against its reference text, diacritics kept. */
function expectHeard(transcript: string): void {
  const { words } = scoreUtterance(recording.reference, transcript);
  console.log(`vi transcript (WER ${String(words.errors)}/${String(words.total)}): "${transcript}"`);
  expect(words.errors / words.total).toBeLessThan(0.35);
}

describe('Vietnamese audio pipelines on Whisper base', () => {
  it('audio-to-diagnosis: Whisper transcribes the Vietnamese recording, the LLM analyses it in Vietnamese', async () => {
    await llmReset(llm.url);
    const res = await agentForm<{
      transcript: string;
      analysis: string;
      language: string;
      disclaimer: string;
    }>(`${agent.url}/pipeline/audio-to-diagnosis`, wav(), { language: 'vi' });
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b).toMatchObject({ language: 'vi', disclaimer: DISCLAIMERS.vi });
    expectHeard(b.transcript);
    const prompt = documentMessages('symptom_analysis', b.transcript, 'vi', budget());
    expect(b.analysis).toBe((await llmSays(llm.url, prompt.messages, MAX_TOKENS)).trim());
  }, 300_000);

  it('audio-full-consult: transcribed, answered, and the answer spoken by the Vietnamese voice', async () => {
    await llmReset(llm.url);
    const res = await agentForm<{
      transcript: string;
      text: string;
      audio_base64: string;
      audio: { format: string; sample_rate: number; duration_seconds: number; engine: string; voice: string };
    }>(`${agent.url}/pipeline/audio-full-consult`, wav(), { language: 'vi' });
    expect(res.status).toBe(200);
    const b = res.body;
    expectHeard(b.transcript);
    const prompt = documentMessages('consultation', b.transcript, 'vi', budget());
    expect(b.text).toBe((await llmSays(llm.url, prompt.messages, MAX_TOKENS)).trim());
    const audio = readWav(Buffer.from(b.audio_base64, 'base64'));
    expect(audio.seconds).toBeCloseTo(b.audio.duration_seconds, 1);
    expect(audio.seconds).toBeGreaterThan(0.3);
    // espeak-ng's Vietnamese voice (TTS_ESPEAK_VOICE_VI), not the English one.
    expect(b.audio).toMatchObject({ format: 'wav', engine: 'espeak-ng', voice: 'vi' });
  }, 300_000);
});
