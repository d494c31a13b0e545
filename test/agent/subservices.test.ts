/** @jest-environment ./test/face/ort-environment.cjs */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import {
  DISCLAIMERS,
  documentMessages,
  documentBudgetBytes,
} from '../../services/agent/src/domain/pipelines.js';
import type { CodesearchTestServer } from '../codesearch/helpers.js';
import {
  ensureFaceFixtures,
  form as faceForm,
  post as facePost,
  startFace,
  type FaceTestServer,
} from '../face/helpers.js';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { startLlm, type LlmTestServer } from '../llm/helpers.js';
import { startOcr, type OcrTestServer } from '../ocr/helpers.js';
import { EN_NOTE, VI_NOTE, characterAccuracy, renderNote } from '../ocr/pages.js';
import { startSim, type SimTestServer } from '../patient-sim/helpers.js';
import { startStt, type SttTestServer } from '../stt/helpers.js';
import { wordErrorRate } from '../stt/fixtures.js';
import { readWav, startTts, type TtsTestServer } from '../tts/helpers.js';
import {
  AGENT_TOKEN,
  agentGet,
  agentPost,
  closedPort,
  sseEvents,
  startAgent,
  type AgentTestServer,
} from './helpers.js';
import {
  agentForm,
  blackHole,
  librivoxSpeech,
  llmReset,
  llmSays,
  metricValue,
  startCodesearchSlice,
  type BlackHole,
  type Speech,
} from './subservice-helpers.js';

// The agent's sub-service endpoints in front of the real sub-services on ephemeral ports:
// pocketsphinx speech to text, tesseract OCR, espeak-ng speech, the code search on a real ICD-10-CM
// slice, the patient simulator and the agent both on the real text LLM (tiny generated model,
// greedy), and face recognition with its real models on real photographs.

const MAX_TOKENS = 16;

let llm: LlmTestServer;
let stt: SttTestServer;
let ocr: OcrTestServer;
let tts: TtsTestServer;
let codes: CodesearchTestServer;
let sim: SimTestServer;
let face: FaceTestServer;
let agent: AgentTestServer;
let speech: { short: Speech; long: Speech };
let photos: Record<FacePhoto, string>;
let enNote: Buffer;

beforeAll(async () => {
  [speech, photos, enNote] = await Promise.all([librivoxSpeech(), ensureFaceFixtures(), renderNote(EN_NOTE)]);
  [llm, stt, ocr, tts, codes, face] = await Promise.all([
    // One sequence: see llmReset.
    startLlm({ MAX_CONCURRENCY: '1' }),
    // A 6 s limit: the 7.1 s recording is the stt service's own 413.
    startStt({ MAX_CONCURRENCY: '1', STT_MAX_AUDIO_SECONDS: '6' }),
    startOcr({ MAX_CONCURRENCY: '1' }),
    startTts(),
    startCodesearchSlice(),
    startFace(),
  ]);
  sim = await startSim(llm.url);
  agent = await startAgent({
    LLM_URL: llm.url,
    STT_URL: stt.url,
    OCR_URL: ocr.url,
    TTS_URL: tts.url,
    CODE_SEARCH_URL: codes.url,
    PATIENT_SIM_URL: sim.url,
    FACE_URL: face.url,
    AGENT_MAX_TOKENS: String(MAX_TOKENS),
    AGENT_UPLOAD_MAX_BYTES: '2mb',
  });
}, 180_000);

afterAll(async () => {
  await agent.close();
  await Promise.all([sim.close(), stt.close(), ocr.close(), tts.close(), codes.close(), face.close()]);
  await llm.close();
});

const budget = (): number => documentBudgetBytes(agent.config.AGENT_CONTEXT_TOKENS, MAX_TOKENS);

interface Step {
  name: string;
  ms: number;
  subservice: string | null;
  model: string | null;
  skipped: boolean;
  detail: string | null;
}

describe('POST /transcribe', () => {
  it('transcribes real speech through the stt service and has the LLM analyse it', async () => {
    await llmReset(llm.url);
    const res = await agentForm<{
      intent: string;
      model: string | null;
      text: string;
      language: string;
      transcription: { backend: string; segments: unknown[]; duration_seconds: number };
      analysis: string | null;
      disclaimer: string | null;
      steps: Step[];
      processing_time_ms: number;
    }>(
      `${agent.url}/transcribe`,
      { file: { bytes: speech.short.wav, name: speech.short.name, type: 'audio/wav' } },
      { language: 'en', analyze: 'true' },
    );
    expect(res.status).toBe(200);
    const b = res.body;
    // pocketsphinx on this recording: "he was not an ill disposed young man".
    expect(wordErrorRate(speech.short.transcript, b.text)).toBeLessThan(0.5);
    expect(b).toMatchObject({ intent: 'transcribe', language: 'en', model: 'alpha4_service' });
    expect(b.transcription.backend).toBe('pocketsphinx');
    expect(b.transcription.duration_seconds).toBeCloseTo(speech.short.seconds, 1);
    expect(b.transcription.segments.length).toBeGreaterThan(0);
    // The analysis is the LLM's own answer to the agent's prompt about this transcript.
    const prompt = documentMessages('transcript_analysis', b.text, 'en', budget());
    expect(b.analysis).toBe((await llmSays(llm.url, prompt.messages, MAX_TOKENS)).trim());
    expect(b.disclaimer).toBe(DISCLAIMERS.en);
    expect(b.steps.map((s) => [s.name, s.subservice, s.model])).toEqual([
      ['transcribe', 'stt', null],
      ['analysis', null, 'alpha4_service'],
    ]);
    expect(b.steps[0]!.ms).toBeGreaterThan(0);
    expect(b.processing_time_ms).toBeGreaterThanOrEqual(b.steps[0]!.ms + b.steps[1]!.ms);
  });

  it("passes on the stt service's 422 (no Vietnamese model), 415 (not audio) and 413 (too long)", async () => {
    const wav = { file: { bytes: speech.short.wav, name: speech.short.name, type: 'audio/wav' } };
    // language defaults to vi: the stt service has no Whisper model here.
    const vi = await agentForm(`${agent.url}/transcribe`, wav);
    expect(vi.status).toBe(422);
    expect(JSON.stringify(vi.body.detail)).toMatch(/stt: .*(Whisper|whisper)/);

    const png = await agentForm(
      `${agent.url}/transcribe`,
      { file: { bytes: enNote, name: 'note.png', type: 'image/png' } },
      { language: 'en' },
    );
    expect(png.status).toBe(415);
    expect(png.body.detail).toMatch(/^stt: /);

    const long = await agentForm(
      `${agent.url}/transcribe`,
      { file: { bytes: speech.long.wav, name: speech.long.name, type: 'audio/wav' } },
      { language: 'en' },
    );
    expect(long.status).toBe(413);
    expect(long.body.detail).toMatch(/^stt: .*6/);
  });

  it('answers 413 itself past AGENT_UPLOAD_MAX_BYTES, 422 without a file, 401 without a token', async () => {
    const big = await agentForm(`${agent.url}/transcribe`, {
      file: { bytes: Buffer.alloc(2 * 1024 * 1024 + 1), name: 'big.wav', type: 'audio/wav' },
    });
    expect(big.status).toBe(413);
    expect(big.body.detail).toMatch(/2 MB/);
    const none = await agentForm(`${agent.url}/transcribe`, {}, { language: 'en' });
    expect(none.status).toBe(422);
    expect(JSON.stringify(none.body.detail)).toMatch(/file/);
    const anonymous = await agentForm(
      `${agent.url}/transcribe`,
      { file: { bytes: speech.short.wav, name: speech.short.name } },
      {},
      { token: null },
    );
    expect(anonymous.status).toBe(401);
  });
});

describe('POST /ocr', () => {
  it('reads a rendered note, searches its codes in the code search and has the LLM analyse it', async () => {
    await llmReset(llm.url);
    const res = await agentForm<{
      intent: string;
      model: string | null;
      text: string;
      ocr: { mean_confidence: number; pages: unknown[] };
      analysis: string | null;
      disclaimer: string | null;
      codes: {
        code_types: string[];
        missing_types: string[];
        mode: string;
        queries: { query: string; results: { code: string; type: string }[] }[];
        candidates: { code: string; type: string; title: string; queries: number[] }[];
      };
      steps: Step[];
    }>(
      `${agent.url}/ocr`,
      { file: { bytes: enNote, name: 'note.png', type: 'image/png' } },
      { analyze: 'true', search: 'true', language: 'en' },
    );
    expect(res.status).toBe(200);
    const b = res.body;
    expect(characterAccuracy(EN_NOTE.join('\n'), b.text)).toBeGreaterThanOrEqual(0.98);
    expect(b.ocr.pages).toHaveLength(1);
    expect(b).toMatchObject({ intent: 'ocr', model: 'alpha4_service', disclaimer: DISCLAIMERS.en });
    // Codes: each line and clause was a query; ICPC-2 is not loaded, which is reported.
    expect(b.codes.code_types).toEqual(['ICD10']);
    expect(b.codes.missing_types).toEqual(['ICPC2']);
    expect(b.codes.mode).toBe('lexical');
    const queries = b.codes.queries.map((q) => q.query);
    expect(queries).toEqual(expect.arrayContaining(['COPD', 'community-acquired pneumonia']));
    const found = new Map(b.codes.queries.map((q) => [q.query, q.results.map((r) => r.code)]));
    expect(found.get('COPD')?.[0]).toMatch(/^J44/);
    expect(found.get('community-acquired pneumonia')).toContain('J18.9');
    expect(found.get('productive cough and fever for 5 days')).toEqual(expect.arrayContaining(['R05']));
    const candidates = b.codes.candidates.map((c) => c.code);
    expect(candidates).toEqual(expect.arrayContaining(['J44.9', 'J18.9', 'R50.9']));
    expect(new Set(candidates).size).toBe(candidates.length);
    // Every candidate is a code of the set the code search holds.
    for (const c of b.codes.candidates) {
      const res2 = await fetch(`${codes.url}/codes/ICD10/${encodeURIComponent(c.code)}`);
      expect(res2.status).toBe(200);
    }
    const prompt = documentMessages('ocr_analysis', b.text, 'en', budget());
    expect(b.analysis).toBe((await llmSays(llm.url, prompt.messages, MAX_TOKENS)).trim());
    expect(b.steps.map((s) => s.name)).toEqual(['ocr', 'code_search', 'analysis']);
    expect(b.steps[1]).toMatchObject({ subservice: 'codesearch', detail: expect.stringMatching(/queries/) });
  });

  it('reads Vietnamese (the curated Vietnamese terms find I10 and E11), without the LLM by default', async () => {
    const res = await agentForm<{
      model: string | null;
      text: string;
      analysis: string | null;
      codes: { candidates: { code: string; title_vi: string | null }[] };
    }>(`${agent.url}/ocr`, { file: { bytes: await renderNote(VI_NOTE), name: 'vi.png' } }, { search: 'yes' });
    expect(res.status).toBe(200);
    expect(characterAccuracy(VI_NOTE.join('\n'), res.body.text)).toBeGreaterThanOrEqual(0.98);
    expect(res.body).toMatchObject({ model: null, analysis: null });
    const candidates = res.body.codes.candidates.map((c) => c.code);
    expect(candidates).toContain('I10');
    expect(candidates.some((c) => c.startsWith('E11'))).toBe(true);
  });

  it("passes on the OCR service's 415 for a file that is not an image", async () => {
    const res = await agentForm(`${agent.url}/ocr`, {
      file: { bytes: Buffer.from('plain text, not an image'), name: 'note.txt', type: 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.body.detail).toMatch(/^ocr: /);
  });
});

describe('POST /face', () => {
  it('recognizes a registered person in another photo (field `image`) and not someone else (field `file`)', async () => {
    const registered = await facePost(
      `${face.url}/register_person`,
      faceForm({ person_name: 'Barack Obama' }, [{ field: 'file', path: photos.obama }]),
    );
    expect(registered.status).toBe(200);
    const same = await agentForm<{
      intent: string;
      model: null;
      faces_detected: number;
      faces: { recognized: boolean; person_name: string; confidence: number }[];
      recognition: { device: string };
    }>(`${agent.url}/face`, {
      image: { bytes: readFileSync(photos.obama2), name: 'obama2.jpg', type: 'image/jpeg' },
    });
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ intent: 'face_recognize', model: null, faces_detected: 1 });
    expect(same.body.faces[0]).toMatchObject({ recognized: true, person_name: 'Barack Obama' });
    expect(same.body.recognition.device).toBe('cpu');
    const other = await agentForm<{ faces: { recognized: boolean; person_name: string }[] }>(
      `${agent.url}/face`,
      {
        file: { bytes: readFileSync(photos.biden), name: 'biden.jpg', type: 'image/jpeg' },
      },
    );
    expect(other.status).toBe(200);
    expect(other.body.faces.some((f) => f.person_name === 'Barack Obama')).toBe(false);
  });

  it('refuses two images at once (400) and passes on the face service’s 400 for an undecodable file', async () => {
    const bytes = readFileSync(photos.biden);
    const two = await agentForm(`${agent.url}/face`, {
      file: { bytes, name: 'a.jpg' },
      image: { bytes, name: 'b.jpg' },
    });
    expect(two.status).toBe(400);
    const junk = await agentForm(`${agent.url}/face`, {
      file: { bytes: Buffer.from('GIF89a....'), name: 'x.gif' },
    });
    expect(junk.status).toBeGreaterThanOrEqual(400);
    expect(junk.status).toBeLessThan(500);
    expect(junk.body.detail).toMatch(/^face: /);
  });
});

describe('POST /tts', () => {
  it('returns decodable WAV audio in base64 with its format, rate and duration', async () => {
    const res = await agentPost(`${agent.url}/tts`, {
      text: 'The patient has had a fever and a cough for five days.',
      language: 'en',
    });
    expect(res.status).toBe(200);
    const b = (await res.json()) as {
      intent: string;
      model: null;
      audio_base64: string;
      format: string;
      mime_type: string;
      sample_rate: number;
      duration_seconds: number;
      size_bytes: number;
      engine: string;
      speed: number;
    };
    expect(b).toMatchObject({
      intent: 'tts',
      model: null,
      format: 'wav',
      mime_type: 'audio/wav',
      engine: 'espeak-ng',
      speed: 1,
    });
    const wav = readWav(Buffer.from(b.audio_base64, 'base64'));
    expect(wav).toMatchObject({ audioFormat: 1, channels: 1, bitsPerSample: 16, sampleRate: b.sample_rate });
    expect(b.size_bytes).toBe(wav.dataBytes + 44);
    expect(wav.seconds).toBeCloseTo(b.duration_seconds, 1);
    expect(wav.seconds).toBeGreaterThan(2);
  });

  it('speaks Vietnamese faster at speed 2, and validates the fields itself', async () => {
    const say = async (speed: number) =>
      (await (
        await agentPost(`${agent.url}/tts`, { text: 'Bệnh nhân sốt và ho năm ngày.', speed })
      ).json()) as {
        duration_seconds: number;
        language: string;
      };
    const [normal, fast] = await Promise.all([say(1), say(2)]);
    expect(normal.language).toBe('vi');
    expect(fast.duration_seconds / normal.duration_seconds).toBeLessThan(0.7);
    const bad = await agentPost(`${agent.url}/tts`, { text: 'x', language: 'fr', speed: 3 });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(await bad.json())).toMatch(/language[\s\S]*speed|speed[\s\S]*language/);
  });
});

describe('POST /search', () => {
  it('finds codes through the code search and reports the types it does not have', async () => {
    const res = await agentPost(`${agent.url}/search`, {
      query: 'THA',
      code_types: ['ICD10', 'ICPC2'],
      top_k: 3,
    });
    expect(res.status).toBe(200);
    const b = (await res.json()) as {
      intent: string;
      model: null;
      results: { code: string; title_vi: string }[];
      code_types: string[];
      missing_types: string[];
      warnings: string[];
      expansions: { abbreviation: string }[];
    };
    expect(b).toMatchObject({
      intent: 'search_code',
      model: null,
      code_types: ['ICD10'],
      missing_types: ['ICPC2'],
    });
    expect(b.results[0]?.code).toBe('I10');
    expect(b.results.length).toBeLessThanOrEqual(3);
    expect(b.warnings.join(' ')).toMatch(/ICPC2/);
    expect(b.expansions[0]?.abbreviation).toBe('THA');
    const all = (await (await agentPost(`${agent.url}/search`, { query: 'pneumonia' })).json()) as {
      code_types: string[];
      missing_types: string[];
      results: { code: string }[];
    };
    expect(all.missing_types).toEqual(expect.arrayContaining(['ICPC2', 'CPT', 'SERVICE', 'PROCEDURE']));
    expect(all.results.map((r) => r.code)).toEqual(expect.arrayContaining(['J13', 'J18.9']));
  });

  it('validates code_types and query itself (422)', async () => {
    const res = await agentPost(`${agent.url}/search`, { query: ' ', code_types: ['ICD9'] });
    expect(res.status).toBe(422);
    const detail = JSON.stringify(await res.json());
    expect(detail).toMatch(/query/);
    expect(detail).toMatch(/code_types/);
  });
});

describe('POST /patient', () => {
  it('forwards turns to the patient simulator and keeps its session', async () => {
    const first = await agentPost(`${agent.url}/patient`, {
      message: 'Do you have a fever?',
      patient_id: 'en-cough-chest-pain-miller',
    });
    expect(first.status).toBe(200);
    const a = (await first.json()) as {
      intent: string;
      model: null;
      response: string;
      session_id: string;
      turn: number;
      new_session: boolean;
      revealed: { id: string }[];
      patient_model: string;
    };
    expect(a).toMatchObject({ intent: 'patient_sim', model: null, turn: 1, new_session: true });
    expect(a.response.length).toBeGreaterThan(0);
    expect(a.revealed.length).toBeGreaterThan(0);
    expect(typeof a.patient_model).toBe('string');
    const second = (await (
      await agentPost(`${agent.url}/patient`, {
        message: 'How long have you been coughing?',
        patient_id: 'en-cough-chest-pain-miller',
        session_id: a.session_id,
      })
    ).json()) as { session_id: string; turn: number };
    expect(second).toMatchObject({ session_id: a.session_id, turn: 2 });
    // The simulator's own record of the session has both turns.
    const session = (await (await fetch(`${sim.url}/sessions/${a.session_id}`)).json()) as { turns: number };
    expect(session.turns).toBe(2);
  });

  it("passes on the simulator's 404 for an unknown patient", async () => {
    const res = await agentPost(`${agent.url}/patient`, { message: 'Hello', patient_id: 'nobody-here' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^patient_sim: /);
  });
});

describe('/run and /run/multipart on sub-service intents', () => {
  interface RunBody {
    response: string;
    intent: string;
    model: string;
    session_id: string;
    intent_source: string;
    data?: Record<string, unknown>;
  }

  it('an audio file alone is transcribed by the stt service', async () => {
    const res = await agentForm<RunBody>(
      `${agent.url}/run/multipart`,
      { audio: { bytes: speech.short.wav, name: speech.short.name, type: 'audio/wav' } },
      { language: 'en' },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ intent: 'transcribe', model: 'stt', intent_source: 'rules' });
    expect(wordErrorRate(speech.short.transcript, res.body.response)).toBeLessThan(0.5);
    expect(res.body.data?.['transcript']).toBe(res.body.response);
  });

  it('an image alone is read by the OCR service; with a request, the LLM answers on the text found', async () => {
    const alone = await agentForm<RunBody>(`${agent.url}/run/multipart`, {
      image: { bytes: enNote, name: 'note.png', type: 'image/png' },
    });
    expect(alone.status).toBe(200);
    expect(alone.body).toMatchObject({ intent: 'ocr', model: 'ocr' });
    expect(characterAccuracy(EN_NOTE.join('\n'), alone.body.response)).toBeGreaterThan(0.9);
    await llmReset(llm.url);
    const asked = await agentForm<RunBody>(
      `${agent.url}/run/multipart`,
      { image: { bytes: enNote, name: 'note.png', type: 'image/png' } },
      { message: 'Summarize this document', language: 'en' },
    );
    expect(asked.status).toBe(200);
    expect(asked.body).toMatchObject({ intent: 'summarize', model: 'alpha4_service' });
    expect(asked.body.data?.['ocr_text']).toBe(alone.body.response);
  });

  it('face_recognize sends the image to the face service', async () => {
    const res = await agentForm<RunBody>(
      `${agent.url}/run/multipart`,
      { image: { bytes: readFileSync(photos.biden), name: 'biden.jpg', type: 'image/jpeg' } },
      { force_intent: 'face_recognize' },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ intent: 'face_recognize', model: 'face' });
    expect(res.body.response).toMatch(/^1 face\(s\)/);
    expect(res.body.data).toMatchObject({ faces_detected: 1 });
  });

  it('refuses a file of the wrong kind, and a forced intent without its file', async () => {
    const wrong = await agentForm(`${agent.url}/run/multipart`, {
      audio: { bytes: Buffer.from('not audio at all'), name: 'notes.txt', type: 'text/plain' },
    });
    expect(wrong.status).toBe(415);
    const missing = await agentForm(
      `${agent.url}/run/multipart`,
      { image: { bytes: enNote, name: 'note.png', type: 'image/png' } },
      { force_intent: 'transcribe' },
    );
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toMatch(/audio/);
  });

  it('search_code answers with the codes the code search found', async () => {
    const res = await agentPost(`${agent.url}/run`, {
      message: 'tra mã ICD-10 cho viêm phổi',
      language: 'vi',
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as RunBody;
    expect(body).toMatchObject({ intent: 'search_code', model: 'codesearch', intent_source: 'rules' });
    expect(body.response).toMatch(/^J18\.9 \(ICD10\): /m);
    expect((body.data?.['results'] as unknown[]).length).toBeGreaterThan(0);
  });

  it('tts answers with the audio, patient_sim with the patient in one session, shell with 403 when off', async () => {
    const spoken = (await (
      await agentPost(`${agent.url}/run`, { message: 'Xin chào', force_intent: 'tts' })
    ).json()) as RunBody;
    expect(spoken).toMatchObject({ intent: 'tts', model: 'tts', response: 'Xin chào' });
    expect(
      Buffer.from(spoken.data?.['audio_base64'] as string, 'base64')
        .subarray(0, 4)
        .toString(),
    ).toBe('RIFF');

    const turn = async (session_id: string | null) => {
      const res = await agentPost(`${agent.url}/run`, {
        message: 'How long have you had the cough?',
        force_intent: 'patient_sim',
        patient_id: 'en-cough-chest-pain-miller',
        session_id,
      });
      expect(res.status).toBe(200);
      return (await res.json()) as RunBody;
    };
    const first = await turn(null);
    expect(first).toMatchObject({ intent: 'patient_sim', model: 'patient_sim' });
    expect(first.data).toMatchObject({ response: first.response, session_id: first.session_id, turn: 1 });
    const second = await turn(first.session_id);
    expect(second.data).toMatchObject({ session_id: first.session_id, turn: 2 });
    // An id of the client's: the simulator takes every id the agent does (one with . _ : -), and
    // the agent itself refuses one the simulator would not (starting with one of them).
    const chosen = await turn('ward-3.bed:7_a');
    expect(chosen).toMatchObject({
      session_id: 'ward-3.bed:7_a',
      data: { session_id: 'ward-3.bed:7_a', turn: 1 },
    });
    for (const id of ['_ward', '-ward', '.ward', ':ward']) {
      const res = await agentPost(`${agent.url}/run`, {
        message: 'Hello',
        force_intent: 'patient_sim',
        patient_id: 'en-cough-chest-pain-miller',
        session_id: id,
      });
      expect(res.status).toBe(422);
      expect(JSON.stringify(await res.json())).toMatch(/session_id.*starting with a letter or a digit/);
    }

    const shell = await agentPost(`${agent.url}/run`, { message: 'ls', force_intent: 'shell' });
    expect(shell.status).toBe(403);
  });

  it('tts streamed over SSE and over the WebSocket carries the audio (data) as the plain reply does', async () => {
    const isWav = (data: Record<string, unknown>): string =>
      Buffer.from(data['audio_base64'] as string, 'base64')
        .subarray(0, 4)
        .toString();
    const res = await agentPost(`${agent.url}/run`, {
      message: 'Xin chào',
      force_intent: 'tts',
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-agent-model')).toBe('tts');
    const events = sseEvents(await res.text());
    // An event named `data` (the reply's data as JSON), the text, [DONE].
    expect(events.map((e) => e.event)).toEqual(['data', null, null]);
    const sse = JSON.parse(events[0]!.data) as Record<string, unknown>;
    expect(sse).toMatchObject({ format: 'wav', sample_rate: expect.any(Number) });
    expect(isWav(sse)).toBe('RIFF');
    expect(events.slice(1).map((e) => e.data)).toEqual(['Xin chào', '[DONE]']);

    const ws = new WebSocket(`${agent.url.replace(/^http/, 'ws')}/ws/chat?token=${AGENT_TOKEN}`);
    const frames: string[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        frames.push(data.toString('utf8'));
        if (frames.length === 1) ws.send(JSON.stringify({ message: 'Xin chào', force_intent: 'tts' }));
        if (frames.at(-1) === '[DONE]') resolve();
      });
      ws.once('error', reject);
    });
    ws.close();
    expect(JSON.parse(frames[1]!)).toMatchObject({ type: 'metadata', intent: 'tts', model: 'tts' });
    const frame = JSON.parse(frames[2]!) as { type: string; data: Record<string, unknown> };
    expect(frame.type).toBe('data');
    expect(frame.data).toMatchObject({ format: 'wav' });
    expect(isWav(frame.data)).toBe('RIFF');
    expect(frames.slice(3)).toEqual(['Xin chào', '[DONE]']);
  });
});

describe('metrics and logs', () => {
  it('counts calls per sub-service and outcome, and never logs clinical text', async () => {
    expect(
      await metricValue(agent.url, 'agent_subservice_requests_total', { subservice: 'tts', outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      await metricValue(agent.url, 'agent_subservice_requests_total', {
        subservice: 'stt',
        outcome: 'error',
      }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      await metricValue(agent.url, 'agent_subservice_request_duration_seconds_count', {
        subservice: 'codesearch',
      }),
    ).toBeGreaterThan(0);
    const logs = JSON.stringify(agent.logs);
    expect(logs).not.toMatch(/productive cough/);
    expect(logs).not.toMatch(/disposed/);
    expect(logs).not.toMatch(/fever and a cough/);
  });
});

describe('sub-services not configured, unreachable, hung', () => {
  let bad: AgentTestServer;
  let patient: AgentTestServer;
  let hole: BlackHole;
  let hole2: BlackHole;

  beforeAll(async () => {
    [hole, hole2] = await Promise.all([blackHole(), blackHole()]);
    const refused = `http://127.0.0.1:${await closedPort()}`;
    bad = await startAgent({
      LLM_URL: llm.url,
      OCR_URL: refused,
      CODE_SEARCH_URL: refused,
      TTS_URL: hole.url,
      AGENT_SUBSERVICE_TIMEOUT_MS: '400',
    });
    patient = await startAgent({
      LLM_URL: llm.url,
      OCR_URL: ocr.url,
      PATIENT_SIM_URL: hole2.url,
      AGENT_SUBSERVICE_TIMEOUT_MS: '60000',
    });
  });
  afterAll(async () => {
    await Promise.all([bad.close(), patient.close()]);
    await Promise.all([hole.close(), hole2.close()]);
  });

  it('answers 503 naming the sub-service and its variable when its URL is unset', async () => {
    const tr = await agentForm(`${bad.url}/transcribe`, { file: { bytes: speech.short.wav, name: 'a.wav' } });
    expect(tr.status).toBe(503);
    expect(tr.body.detail).toMatch(/speech to text sub-service \(stt\) is not configured: set STT_URL/);
    const fc = await agentForm(`${bad.url}/face`, {
      file: { bytes: readFileSync(photos.obama), name: 'a.jpg' },
    });
    expect(fc.status).toBe(503);
    expect(fc.body.detail).toMatch(/\(face\) is not configured: set FACE_URL/);
    // OCR is configured (the real one) but the code search is not: the 503 comes before any OCR call.
    const oc = await agentForm(
      `${patient.url}/ocr`,
      { file: { bytes: enNote, name: 'note.png' } },
      { search: 'true' },
    );
    expect(oc.status).toBe(503);
    expect(oc.body.detail).toMatch(/\(codesearch\) is not configured: set CODE_SEARCH_URL/);
    expect(
      await metricValue(patient.url, 'agent_subservice_request_duration_seconds_count', {
        subservice: 'ocr',
      }),
    ).toBe(0);
    const pt = await agentPost(`${bad.url}/patient`, { message: 'hi', patient_id: 'x' });
    expect(pt.status).toBe(503);
    expect(((await pt.json()) as { detail: string }).detail).toMatch(/PATIENT_SIM_URL/);
    expect(
      await metricValue(bad.url, 'agent_subservice_requests_total', {
        subservice: 'stt',
        outcome: 'not_configured',
      }),
    ).toBe(1);
  });

  it('answers 502 at once naming an unreachable sub-service and the cause', async () => {
    const started = Date.now();
    const res = await agentForm(`${bad.url}/ocr`, { file: { bytes: enNote, name: 'note.png' } });
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(
      /OCR sub-service \(ocr\) at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED\)/,
    );
    const search = await agentPost(`${bad.url}/search`, { query: 'fever' });
    expect(search.status).toBe(502);
    expect(((await search.json()) as { detail: string }).detail).toMatch(/codesearch.*ECONNREFUSED/);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(
      await metricValue(bad.url, 'agent_subservice_requests_total', {
        subservice: 'ocr',
        outcome: 'unavailable',
      }),
    ).toBe(1);
  });

  it('answers 502 (spec: a sub-service that timed out) when one does not answer within AGENT_SUBSERVICE_TIMEOUT_MS', async () => {
    const started = Date.now();
    const res = await agentPost(`${bad.url}/tts`, { text: 'hello', language: 'en' });
    const took = Date.now() - started;
    expect(res.status).toBe(502);
    expect(((await res.json()) as { detail: string }).detail).toMatch(
      /text to speech sub-service \(tts\) timed out: no answer within 400 ms \(AGENT_SUBSERVICE_TIMEOUT_MS\)/,
    );
    expect(took).toBeGreaterThanOrEqual(380);
    expect(took).toBeLessThan(3000);
    expect(
      await metricValue(bad.url, 'agent_subservice_requests_total', {
        subservice: 'tts',
        outcome: 'timeout',
      }),
    ).toBe(1);
  });

  it('drops the sub-service call when the client goes away', async () => {
    const controller = new AbortController();
    const pending = agentPost(
      `${patient.url}/patient`,
      { message: 'hi', patient_id: 'x' },
      { signal: controller.signal },
    ).catch((e: unknown) => e);
    const until = Date.now() + 5000;
    while (hole2.accepted() === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(hole2.accepted()).toBe(1);
    controller.abort();
    await pending;
    const deadline = Date.now() + 3000;
    while (hole2.closedByPeer() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(hole2.closedByPeer()).toBe(1);
    const aborted = async () =>
      metricValue(patient.url, 'agent_subservice_requests_total', {
        subservice: 'patient_sim',
        outcome: 'aborted',
      });
    const stop = Date.now() + 2000;
    while ((await aborted()) === 0 && Date.now() < stop) await new Promise((r) => setTimeout(r, 20));
    expect(await aborted()).toBe(1);
  });

  it('still needs a token', async () => {
    expect((await agentGet(`${bad.url}/status`, null)).status).toBe(401);
  });
});
