import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BUILTIN_CASES_DIR } from '../../services/patient-sim/src/config.js';
import { buildMessages, promptView } from '../../services/patient-sim/src/domain/prompt.js';
import { cleanReply } from '../../services/patient-sim/src/domain/turn.js';
import { findLeak } from '../../services/patient-sim/src/domain/leak.js';
import { prepareText } from '../../services/patient-sim/src/domain/text.js';
import type { CaseFile } from '../../services/patient-sim/src/schemas/case.js';
import { auth, post as llmPost, startLlm, waitFor, type LlmTestServer } from '../llm/helpers.js';
import { closedPort, postJson, startSim, turn, type SimTestServer } from './helpers.js';

// The simulator in front of the real text LLM service (services/llm on the tiny generated GGUF),
// both on real sockets. The tiny model writes deterministic gibberish under greedy decoding, so a
// reply can be compared with what the LLM itself answers to the same prompt.

const CAP = 'en-cough-chest-pain-miller';
const DENGUE = 'vi-sot-ngay-5-hoa';
const readCase = (id: string): CaseFile =>
  JSON.parse(readFileSync(join(BUILTIN_CASES_DIR, `${id}.json`), 'utf8')) as CaseFile;

let llm: LlmTestServer;
let sim: SimTestServer;
beforeAll(async () => {
  llm = await startLlm({ MAX_CONCURRENCY: '2' });
  sim = await startSim(llm.url);
}, 60_000);
afterAll(async () => {
  await sim.close();
  await llm.close();
});

/** What the LLM answers, greedy, to these messages (max 24 tokens, as the simulator asks). */
async function llmSays(messages: { role: string; content: string }[]): Promise<string> {
  const res = await llmPost(`${llm.url}/v1/chat/completions`, {
    model: 'alpha-2-9b-it',
    messages,
    temperature: 0,
    max_tokens: 24,
  });
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return cleanReply(body.choices[0]!.message.content);
}

describe('the simulator in front of the real LLM', () => {
  it('is healthy once the LLM answers, and describes itself', async () => {
    const health = await fetch(`${sim.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      status: 'healthy',
      service: 'patient-sim',
      llm: { url: llm.url, state: 'up', model: 'alpha-2-9b-it' },
      cases: 4,
    });
    const root = (await (await fetch(`${sim.url}/`)).json()) as Record<string, unknown>;
    expect(root).toMatchObject({ service: 'patient-sim', status: 'ready', docs: '/docs' });
    const status = (await (await fetch(`${sim.url}/status`)).json()) as Record<string, unknown>;
    expect(status).toMatchObject({
      status: 'ready',
      sessions: { active: 0, replica_local: true },
      slots: { total: 8 },
    });
    const gpu = (await (await fetch(`${sim.url}/gpu_status`)).json()) as Record<string, unknown>;
    expect(gpu).toMatchObject({ available: false, device: 'cpu' });
    const openapi = (await (await fetch(`${sim.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(['/patient', '/patients', '/patients/{patient_id}', '/sessions/{session_id}']),
    );
    expect((await fetch(`${sim.url}/docs/`)).status).toBe(200);
  });

  it('lists the patients without their diagnoses', async () => {
    const list = await (await fetch(`${sim.url}/patients`)).text();
    for (const id of [CAP, DENGUE]) expect(list).toContain(id);
    const detail = await (await fetch(`${sim.url}/patients/${CAP}`)).text();
    const c = readCase(CAP);
    for (const text of [list, detail]) {
      expect(text.toLowerCase()).not.toContain('pneumonia');
      expect(text).not.toContain(c.diagnosis.icd10);
      expect(text).not.toContain(c.facts[0]!.text);
    }
    expect(JSON.parse(detail)).toMatchObject({ id: CAP, askable: { symptom: 5, investigation: 4 } });
  });

  it('answers with the model’s text, reveals only what was asked, and keeps the session across turns', async () => {
    const c = readCase(CAP);
    const first = await turn(sim.url, { message: 'Have you had a fever?', patient_id: CAP });
    expect(first).toMatchObject({
      patient_id: CAP,
      new_session: true,
      language: 'en',
      turn: 1,
      revealed: [{ id: 'fever-rigors', category: 'symptom' }],
      findings: [],
      guard: 'none',
      model: 'alpha-2-9b-it',
      finish_reason: 'length',
    });
    expect(first.usage.completion_tokens).toBe(24);
    expect(first.llm_time_ms).toBeGreaterThan(0);
    expect(first.llm_time_ms).toBeLessThanOrEqual(first.processing_time_ms);
    // The reply is the model's: the LLM answers the prompt the simulator built with the same text.
    const fever = c.facts.filter((f) => f.id === 'fever-rigors');
    const expected1 = await llmSays(
      buildMessages({
        view: promptView(c),
        facts: fever,
        procedures: [],
        history: [],
        message: 'Have you had a fever?',
        historyChars: 6000,
      }),
    );
    expect(first.response).toBe(expected1);
    expect(first.response.length).toBeGreaterThan(0);

    const second = await turn(sim.url, {
      message: 'Let me listen to your chest. Any cough?',
      patient_id: CAP,
      session_id: first.session_id,
    });
    expect(second.turn).toBe(2);
    expect(second.new_session).toBe(false);
    expect(second.revealed).toEqual([
      { id: 'cough-sputum', category: 'present_illness' },
      { id: 'chest-exam', category: 'examination' },
    ]);
    expect(second.findings).toEqual([expect.objectContaining({ id: 'chest-exam', kind: 'examination' })]);
    expect(second.findings[0]!.result).toContain('crackles');
    // The second prompt holds the first exchange and both revealed facts.
    const expected2 = await llmSays(
      buildMessages({
        view: promptView(c),
        facts: c.facts.filter((f) => f.id === 'cough-sputum' || f.id === 'fever-rigors'),
        procedures: c.findings.filter((f) => f.id === 'chest-exam'),
        history: [{ clinician: 'Have you had a fever?', patient: first.response }],
        message: 'Let me listen to your chest. Any cough?',
        historyChars: 6000,
      }),
    );
    expect(second.response).toBe(expected2);
    expect(second.usage.prompt_tokens).toBeGreaterThan(first.usage.prompt_tokens);

    const session = (await (await fetch(`${sim.url}/sessions/${first.session_id}`)).json()) as {
      turns: number;
      revealed: { id: string }[];
      findings: { id: string }[];
      transcript: { clinician: string; patient: string }[];
    };
    expect(session.turns).toBe(2);
    expect(session.revealed.map((r) => r.id)).toEqual(['fever-rigors', 'cough-sputum', 'chest-exam']);
    expect(session.findings.map((f) => f.id)).toEqual(['chest-exam']);
    expect(session.transcript.map((t) => t.patient)).toEqual([first.response, second.response]);
  });

  it('plays Vietnamese cases and uses a session id the client chose', async () => {
    const r = await turn(sim.url, {
      message: 'Em sốt từ bao giờ?',
      patient_id: DENGUE,
      session_id: 'agent-s-1',
    });
    expect(r).toMatchObject({ session_id: 'agent-s-1', new_session: true, language: 'vi' });
    expect(r.revealed).toEqual([{ id: 'fever-course', category: 'present_illness' }]);
    const again = await turn(sim.url, {
      message: 'Chị đo sinh hiệu nhé',
      patient_id: DENGUE,
      session_id: 'agent-s-1',
    });
    expect(again.turn).toBe(2);
    expect(again.findings.map((f) => f.id)).toEqual(['vitals']);
  });

  it('refuses what it cannot do with the right status and a clear message', async () => {
    const unknown = await postJson(`${sim.url}/patient`, { message: 'hi', patient_id: 'nobody' });
    expect(unknown.status).toBe(404);
    const detail = ((await unknown.json()) as { detail: string }).detail;
    expect(detail).toContain('Unknown patient_id "nobody"');
    expect(detail).toContain(CAP);

    const bad = await postJson(`${sim.url}/patient`, { patient_id: CAP, extra: 1, session_id: 'has space' });
    expect(bad.status).toBe(422);
    const issues = ((await bad.json()) as { detail: { loc: string[] }[] }).detail.map((i) => i.loc.join('.'));
    expect(issues).toEqual(expect.arrayContaining(['body.message', 'body.session_id']));

    const empty = await postJson(`${sim.url}/patient`, { patient_id: CAP, message: '   ' });
    expect(empty.status).toBe(422);
    const long = await postJson(`${sim.url}/patient`, { patient_id: CAP, message: 'x'.repeat(4001) });
    expect(long.status).toBe(422);
    const malformed = await postJson(`${sim.url}/patient`, '{"message": ');
    expect(malformed.status).toBe(400);
    const huge = await postJson(`${sim.url}/patient`, { patient_id: CAP, message: 'y'.repeat(70_000) });
    expect(huge.status).toBe(413);

    const s = await turn(sim.url, { message: 'Hello', patient_id: CAP });
    const other = await postJson(`${sim.url}/patient`, {
      message: 'Hello',
      patient_id: DENGUE,
      session_id: s.session_id,
    });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { detail: string }).detail).toContain(`with patient "${CAP}"`);

    const del = await fetch(`${sim.url}/sessions/${s.session_id}`, { method: 'DELETE' });
    expect(await del.json()).toEqual({ deleted: true, session_id: s.session_id, turns: 1 });
    expect((await fetch(`${sim.url}/sessions/${s.session_id}`)).status).toBe(404);
    expect((await fetch(`${sim.url}/sessions/${s.session_id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await fetch(`${sim.url}/patients/nobody`)).status).toBe(404);
  });

  it('exports its metrics under patient_sim_, without ids or text', async () => {
    const text = await (await fetch(`${sim.url}/metrics`)).text();
    expect(text).toMatch(/patient_sim_turns_total\{result="ok",service="patient_sim"\} [1-9]/);
    expect(text).toMatch(/patient_sim_revealed_total\{category="symptom",service="patient_sim"\} [1-9]/);
    expect(text).toMatch(/patient_sim_llm_tokens_total\{kind="completion",service="patient_sim"\} [1-9]/);
    expect(text).toContain('patient_sim_overhead_seconds_bucket');
    expect(text).toContain('patient_sim_llm_up{service="patient_sim"} 1');
    expect(text).toContain('http_requests_total{method="POST",route="/patient",status="200"');
    expect(text).not.toContain(CAP);
    expect(text).not.toContain('fever');
  });

  it('never logs what the clinician or the patient said', () => {
    const all = JSON.stringify(sim.logs);
    expect(all).not.toContain('Have you had a fever');
    expect(all).not.toContain('Em sốt từ bao giờ');
  });

  it('a message longer than the LLM’s context: 400 saying so, not a 502 (found by the OpenAPI fuzz)', async () => {
    const res = await postJson(`${sim.url}/patient`, { message: '0'.repeat(4000), patient_id: CAP });
    const body = (await res.json()) as { detail: string };
    expect({ status: res.status, detail: body.detail }).toEqual({
      status: 400,
      detail: expect.stringContaining("does not fit the LLM's context") as unknown,
    });
  });
});

describe('the reply check on the real model', () => {
  let dir: string;
  let guarded: SimTestServer;
  afterAll(async () => {
    await guarded.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('never sends a reply that names the diagnosis: a case whose diagnosis is a word the model says', async () => {
    // What the model says to this message in this case (greedy: the same every time)...
    const message = 'How are you feeling today?';
    const said = await turn(sim.url, { message, patient_id: CAP });
    // A whole word, as the check reads words (lowercase, without diacritics, split at non-letters).
    const word = prepareText(said.response)
      .folded.split(' ')
      .find((w) => /^[a-z]{4,}$/.test(w));
    expect(word).toBeDefined();
    // ...becomes the hidden diagnosis of a copy of the case (the prompt does not change: the
    // diagnosis is not in it), so the model's reply now names the diagnosis.
    const c = readCase(CAP);
    c.id = 'guard-probe';
    c.diagnosis = { ...c.diagnosis, aliases: [...c.diagnosis.aliases, word!] };
    dir = mkdtempSync(join(tmpdir(), 'patient-guard-'));
    writeFileSync(join(dir, 'guard.json'), JSON.stringify(c));
    guarded = await startSim(llm.url, { PATIENT_CASES_DIR: dir, PATIENT_SIM_BUILTIN_CASES: 'false' });
    const r = await turn(guarded.url, { message, patient_id: 'guard-probe' });
    expect(findLeak(said.response, [word!])).toBe(word);
    expect(findLeak(r.response, [word!])).toBeNull();
    expect(r.response.length).toBeGreaterThan(0);
    expect(['regenerated', 'redacted', 'replaced']).toContain(r.guard);
    const metrics = await (await fetch(`${guarded.url}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(`patient_sim_diagnosis_leaks_total\\{action="${r.guard}",service="patient_sim"\\} 1`),
    );
  }, 30_000);
});

describe('when the LLM is not there', () => {
  it('is not ready with the reason, and a turn gets 503', async () => {
    const port = await closedPort();
    const down = await startSim(`http://127.0.0.1:${port}`);
    try {
      const health = await fetch(`${down.url}/health`);
      expect(health.status).toBe(503);
      const body = (await health.json()) as { status: string; reason: string; llm: { state: string } };
      expect(body).toMatchObject({ status: 'unhealthy', llm: { state: 'down' } });
      expect(body.reason).toContain(`the LLM at http://127.0.0.1:${port} is unreachable (ECONNREFUSED)`);
      const res = await postJson(`${down.url}/patient`, { message: 'Hello', patient_id: CAP });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).not.toBeNull();
      expect(((await res.json()) as { detail: string }).detail).toContain('unreachable (ECONNREFUSED)');
      // A request that names no known patient is refused as such while not ready too.
      const unknown = await postJson(`${down.url}/patient`, { message: 'Hello', patient_id: 'no-such-case' });
      expect(unknown.status).toBe(404);
      // Reading cases and deleting sessions do not need the LLM.
      expect((await fetch(`${down.url}/patients`)).status).toBe(200);
    } finally {
      await down.close();
    }
  });

  it('says why when the LLM is up but not ready, or refuses the token', async () => {
    const loading = await startLlm({ MODEL_PATH: '/nonexistent/model.gguf' }, { waitReady: false });
    const sims = [await startSim(loading.url), await startSim(llm.url, { API_TOKEN: 'wrong' })];
    try {
      await waitFor(() => sims[0]!.service.kit.readiness.reason?.includes('model file not found') === true);
      const a = (await (await fetch(`${sims[0]!.url}/health`)).json()) as {
        reason: string;
        llm: { state: string };
      };
      expect(a.llm.state).toBe('not_ready');
      expect(a.reason).toContain('is not ready: model file not found');
      const b = (await (await fetch(`${sims[1]!.url}/health`)).json()) as { reason: string };
      expect(b.reason).toContain('refused the token (401): set API_TOKEN');
    } finally {
      for (const s of sims) await s.close();
      await loading.close();
    }
  });

  it('a turn while the LLM goes away: retried, then 503, and readiness follows', async () => {
    const own = await startLlm();
    const s = await startSim(own.url, { PATIENT_SIM_LLM_PROBE_MS: '600000', PATIENT_SIM_LLM_RETRIES: '2' });
    try {
      await turn(s.url, { message: 'Hello', patient_id: CAP });
      await own.close();
      const res = await postJson(`${s.url}/patient`, { message: 'Hello again', patient_id: CAP });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { detail: string }).detail).toContain('unreachable');
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toMatch(/patient_sim_llm_retries_total\{reason="connection",service="patient_sim"\} 2/);
      // The failed turn's new session was not kept.
      expect(s.service.sessions.size).toBe(1);
      await waitFor(() => !s.service.kit.readiness.ready);
      expect((await fetch(`${s.url}/health`)).status).toBe(503);
    } finally {
      await s.close();
    }
  });

  it('an LLM that does not answer in time: 504, and its work is stopped', async () => {
    const s = await startSim(llm.url, { PATIENT_SIM_MAX_TOKENS: '3000', PATIENT_SIM_LLM_TIMEOUT_MS: '150' });
    try {
      const res = await postJson(`${s.url}/patient`, { message: 'Tell me everything', patient_id: CAP });
      expect(res.status).toBe(504);
      expect(((await res.json()) as { detail: string }).detail).toContain('did not answer within 150 ms');
      await waitFor(() => llm.service.kit.gate.running === 0, 2000);
      expect(s.service.sessions.size).toBe(0);
    } finally {
      await s.close();
    }
  });

  it('stops the LLM’s work when the client goes away', async () => {
    const s = await startSim(llm.url, { PATIENT_SIM_MAX_TOKENS: '3000' });
    try {
      const controller = new AbortController();
      const pending = postJson(
        `${s.url}/patient`,
        { message: 'Tell me everything', patient_id: CAP },
        { signal: controller.signal },
      ).catch((e: unknown) => e);
      await waitFor(() => llm.service.kit.gate.running === 1, 5000);
      controller.abort();
      await pending;
      await waitFor(() => llm.service.kit.gate.running === 0, 2000);
      await waitFor(
        async () =>
          /patient_sim_turns_total\{result="aborted"[^}]*\} 1/.test(
            await (await fetch(`${s.url}/metrics`)).text(),
          ),
        2000,
      );
      expect(auth).toBeDefined();
    } finally {
      await s.close();
    }
  });
});

describe('bearer auth', () => {
  it('with AUTH_TOKENS_FILE every route but the probes needs a token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'patient-auth-'));
    const file = join(dir, 'tokens');
    writeFileSync(file, 'sim-secret patient_sim\nagent-secret ai_agent\n');
    const s = await startSim(llm.url, { AUTH_TOKENS_FILE: file });
    try {
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
      expect((await fetch(`${s.url}/patients`)).status).toBe(401);
      // A token of another service opens nothing here.
      const other = await fetch(`${s.url}/patients`, { headers: { authorization: 'Bearer agent-secret' } });
      expect(other.status).toBe(403);
      const res = await postJson(
        `${s.url}/patient`,
        { message: 'Hello', patient_id: CAP },
        { headers: { 'content-type': 'application/json', authorization: 'Bearer sim-secret' } },
      );
      expect(res.status).toBe(200);
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
