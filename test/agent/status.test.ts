import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { CodesearchTestServer } from '../codesearch/helpers.js';
import { startLlm, type LlmTestServer } from '../llm/helpers.js';
import { startOcr, type OcrTestServer } from '../ocr/helpers.js';
import { startSim, type SimTestServer } from '../patient-sim/helpers.js';
import { startStt, type SttTestServer } from '../stt/helpers.js';
import { startTts, type TtsTestServer } from '../tts/helpers.js';
import { agentGet, closedPort, startAgent, type AgentTestServer } from './helpers.js';
import { blackHole, startCodesearchSlice, type BlackHole } from './subservice-helpers.js';

// GET /status against the real sub-services and the real text LLM: five sub-services up, face
// recognition down (nothing listens on its port), then hung, then a sub-service killed mid-test.
// GET /capabilities without a token. The OCR service runs with its auth on (its /health needs its
// token): the agent presents OCR_API_TOKEN.

const OCR_TOKEN = 'ocr-token-for-the-agent-0123';

interface SubStatus {
  id: string;
  name: string;
  url: string | null;
  state: string;
  latency_ms: number | null;
  detail: string | null;
}
interface LlmStatus {
  id: string;
  url: string;
  state: string;
  latency_ms: number | null;
  detail: string | null;
  model: string | null;
  cooling_down: boolean;
}
interface StatusBody {
  status: string;
  service: string;
  version: string;
  uptime_seconds: number;
  checked_at: string;
  check_ms: number;
  subservices: SubStatus[];
  llms: LlmStatus[];
  sessions: { active: number; max: number; ttl_seconds: number; replica_local: boolean };
  gate: { limit: number; running: number; waiting: number; queue_size: number };
}

let llm: LlmTestServer;
let stt: SttTestServer;
let ocr: OcrTestServer;
let tts: TtsTestServer;
let codes: CodesearchTestServer;
let sim: SimTestServer;
let agent: AgentTestServer;
let faceUrl: string;
let ttsClosed = false;

beforeAll(async () => {
  [llm, stt, ocr, tts, codes] = await Promise.all([
    startLlm(),
    startStt({ MAX_CONCURRENCY: '1' }),
    startOcr({ MAX_CONCURRENCY: '1', OCR_API_TOKEN: OCR_TOKEN }),
    startTts(),
    startCodesearchSlice(),
  ]);
  sim = await startSim(llm.url);
  faceUrl = `http://127.0.0.1:${await closedPort()}`;
  agent = await startAgent({
    LLM_URL: llm.url,
    STT_URL: stt.url,
    OCR_URL: ocr.url,
    OCR_API_TOKEN: OCR_TOKEN,
    TTS_URL: tts.url,
    CODE_SEARCH_URL: codes.url,
    PATIENT_SIM_URL: sim.url,
    FACE_URL: faceUrl,
    AGENT_MAX_SESSIONS: '50',
  });
}, 120_000);

afterAll(async () => {
  await agent.close();
  await Promise.all([
    sim.close(),
    stt.close(),
    ocr.close(),
    ...(ttsClosed ? [] : [tts.close()]),
    codes.close(),
  ]);
  await llm.close();
});

async function status(url: string): Promise<{ body: StatusBody; ms: number }> {
  const started = Date.now();
  const res = await agentGet(`${url}/status`);
  expect(res.status).toBe(200);
  return { body: (await res.json()) as StatusBody, ms: Date.now() - started };
}

const byId = (b: StatusBody): Record<string, SubStatus> =>
  Object.fromEntries(b.subservices.map((s) => [s.id, s]));

describe('GET /status', () => {
  it('needs a token', async () => {
    expect((await agentGet(`${agent.url}/status`, null)).status).toBe(401);
  });

  it('reports each sub-service and LLM: five up, face down with its cause; degraded', async () => {
    const { body } = await status(agent.url);
    expect(body).toMatchObject({ status: 'degraded', service: 'ai_agent', version: '0.1.0' });
    expect(body.subservices.map((s) => s.id)).toEqual([
      'stt',
      'ocr',
      'tts',
      'codesearch',
      'patient_sim',
      'face',
    ]);
    const s = byId(body);
    for (const id of ['stt', 'ocr', 'tts', 'codesearch', 'patient_sim']) {
      expect(s[id]).toMatchObject({ state: 'up', detail: null });
      expect(s[id]!.latency_ms).toBeGreaterThan(0);
      expect(s[id]!.latency_ms).toBeLessThan(2000);
    }
    expect(s['stt']!.url).toBe(stt.url);
    expect(s['face']).toMatchObject({ state: 'down', url: faceUrl, name: 'Face recognition' });
    expect(s['face']!.detail).toMatch(/unreachable \(ECONNREFUSED\)/);
    expect(body.llms.map((l) => [l.id, l.state, l.cooling_down])).toEqual([
      ['alpha4_service', 'up', false],
      ['beta3_service', 'up', false],
      ['beta_service', 'up', false],
    ]);
    expect(body.llms[0]!.url).toBe(llm.url);
    expect(body.llms[0]!.model).toEqual(expect.any(String));
    expect(body.sessions).toMatchObject({ max: 50, ttl_seconds: 3600, replica_local: true });
    expect(body.gate.limit).toBe(agent.config.MAX_CONCURRENCY);
    expect(Date.parse(body.checked_at)).not.toBeNaN();
  });

  it('reports a sub-service that refuses its credentials as down, saying so', async () => {
    const other = await startAgent({ LLM_URL: llm.url, OCR_URL: ocr.url }, { waitReady: false });
    try {
      const s = byId((await status(other.url)).body);
      expect(s['ocr']).toMatchObject({ state: 'down', detail: expect.stringMatching(/401/) });
    } finally {
      await other.close();
    }
  });

  it('reports a sub-service not ready with its own reason', async () => {
    // The patient simulator is not ready while its LLM is unreachable; its /health says why.
    const unready = await startSim(`http://127.0.0.1:${await closedPort()}`, {}, { waitReady: true });
    const other = await startAgent({ LLM_URL: llm.url, PATIENT_SIM_URL: unready.url }, { waitReady: false });
    try {
      const s = byId((await status(other.url)).body);
      expect(s['patient_sim']).toMatchObject({ state: 'not_ready' });
      expect(s['patient_sim']!.detail).toMatch(/unreachable/);
      expect(s['stt']).toMatchObject({ state: 'not_configured', url: null, latency_ms: null });
      expect(s['stt']!.detail).toMatch(/STT_URL/);
    } finally {
      await other.close();
      await unready.close();
    }
  });

  it('gives up on a hung sub-service after AGENT_STATUS_TIMEOUT_MS and still answers', async () => {
    const hole: BlackHole = await blackHole();
    const other = await startAgent({
      LLM_URL: llm.url,
      TTS_URL: tts.url,
      FACE_URL: hole.url,
      AGENT_STATUS_TIMEOUT_MS: '300',
    });
    try {
      const { body, ms } = await status(other.url);
      expect(ms).toBeLessThan(2000);
      const s = byId(body);
      expect(s['face']).toMatchObject({ state: 'down' });
      expect(s['face']!.detail).toMatch(/no answer within 300 ms/);
      expect(s['face']!.latency_ms).toBeGreaterThanOrEqual(290);
      expect(s['tts']!.state).toBe('up');
      // Unset sub-services do not count against the status; the hung one does.
      expect(body.status).toBe('degraded');
    } finally {
      await other.close();
      await hole.close();
    }
  });

  it('is ok when everything configured is up, and down when no LLM answers', async () => {
    const ok = await startAgent({ LLM_URL: llm.url, CODE_SEARCH_URL: codes.url });
    const noLlm = await startAgent(
      { LLM_URL: `http://127.0.0.1:${await closedPort()}`, CODE_SEARCH_URL: codes.url },
      { waitReady: false },
    );
    try {
      expect((await status(ok.url)).body.status).toBe('ok');
      const down = (await status(noLlm.url)).body;
      expect(down.status).toBe('down');
      expect(down.llms.every((l) => l.state === 'down' && /ECONNREFUSED/.test(l.detail ?? ''))).toBe(true);
      expect(byId(down)['codesearch']!.state).toBe('up');
    } finally {
      await Promise.all([ok.close(), noLlm.close()]);
    }
  });

  it('sees a sub-service that stops mid-test as down', async () => {
    await tts.close();
    ttsClosed = true;
    const s = byId((await status(agent.url)).body);
    expect(s['tts']!.state).toBe('down');
    expect(s['tts']!.detail).toMatch(/unreachable/);
    expect(s['ocr']!.state).toBe('up');
  });
});

describe('GET /capabilities', () => {
  it('lists LLMs, sub-services, pipelines and the shell without a token', async () => {
    const res = await agentGet(`${agent.url}/capabilities`, null);
    expect(res.status).toBe(200);
    const b = (await res.json()) as {
      service: string;
      capabilities: {
        id: string;
        name: string;
        description: string;
        tags: string[];
        gpu: boolean;
        kind: string;
        endpoints: string[];
        available: boolean;
      }[];
    };
    expect(b.service).toBe('ai_agent');
    const ids = b.capabilities.map((c) => c.id);
    expect(ids).toEqual([
      'alpha4_service',
      'beta3_service',
      'beta_service',
      'stt',
      'ocr',
      'tts',
      'codesearch',
      'patient_sim',
      'face',
      'pipeline/audio-to-diagnosis',
      'pipeline/audio-full-consult',
      'pipeline/image-to-codes',
      'pipeline/image-full-analysis',
      'shell',
    ]);
    for (const c of b.capabilities) {
      expect(c.name.length).toBeGreaterThan(0);
      expect(c.description.length).toBeGreaterThan(20);
      expect(c.tags.length).toBeGreaterThan(0);
      expect(typeof c.gpu).toBe('boolean');
      expect(c.endpoints.length).toBeGreaterThan(0);
    }
    const cap = Object.fromEntries(b.capabilities.map((c) => [c.id, c]));
    expect(cap['face']).toMatchObject({ kind: 'subservice', gpu: true, available: true });
    expect(cap['stt']).toMatchObject({ kind: 'subservice', gpu: false });
    expect(cap['alpha4_service']).toMatchObject({ kind: 'llm', gpu: true });
    expect(cap['shell']).toMatchObject({ kind: 'feature', available: false });
    expect(cap['pipeline/image-to-codes']!.endpoints).toEqual(['POST /pipeline/image-to-codes']);
    expect(JSON.stringify(b)).not.toMatch(/127\.0\.0\.1/);
  });
});
