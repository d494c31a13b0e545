import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BUILTIN_CASES_DIR } from '../../services/patient-sim/src/config.js';
import type { CaseFile } from '../../services/patient-sim/src/schemas/case.js';
import { waitFor } from '../llm/helpers.js';
import {
  postJson,
  startScriptedLlm,
  startSim,
  turn,
  type ScriptedLlm,
  type SimTestServer,
} from './helpers.js';

// The simulator over real sockets in front of an LLM whose replies the test writes: what a real
// model cannot be made to say on cue (a fact word for word, an empty regeneration), and when (a
// reply held past the session's TTL). The clock of the sessions is the test's.

const CAP = 'en-cough-chest-pain-miller';
const cap = JSON.parse(readFileSync(join(BUILTIN_CASES_DIR, `${CAP}.json`), 'utf8')) as CaseFile;
const fever = cap.facts.find((f) => f.id === 'fever-rigors')!.text;
const FEVER_FIRST = "I've been feverish since yesterday, with shaking chills last night.";

let llm: ScriptedLlm;
let sim: SimTestServer;
let clock = Date.UTC(2026, 0, 1);
beforeAll(async () => {
  llm = await startScriptedLlm();
  sim = await startSim(
    llm.url,
    { PATIENT_SIM_SESSION_TTL_S: '2', PATIENT_SIM_MAX_SESSIONS: '2' },
    { now: () => clock },
  );
}, 30_000);
afterAll(async () => {
  await sim.close();
  await llm.close();
});

interface SessionBody {
  turns: number;
  revealed: { id: string }[];
  transcript: { patient: string }[];
  expires_at: string;
}

describe('a reply that quotes a fact word for word', () => {
  it('is sent whole, with the fact it reveals', async () => {
    for (const reply of [FEVER_FIRST, `Yes doctor. ${fever}`]) {
      llm.respond = () => reply;
      const res = await turn(sim.url, { message: 'Do you have a fever?', patient_id: CAP });
      expect(res.response).toBe(reply);
      expect(res.guard).toBe('none');
      expect(res.revealed).toEqual([{ id: 'fever-rigors', category: 'symptom' }]);
      // The fact was in the prompt the LLM answered.
      expect(llm.requests.at(-1)![0]!.content).toContain(fever);
      await fetch(`${sim.url}/sessions/${res.session_id}`, { method: 'DELETE' });
    }
  });
});

describe('a reply that names the diagnosis', () => {
  it('is redacted when its regeneration comes back empty, not refused', async () => {
    const replies = [`I reckon it's pneumonia. ${FEVER_FIRST}`, ''];
    const before = llm.requests.length;
    llm.respond = () => replies[llm.requests.length - before - 1] ?? '';
    const res = await turn(sim.url, { message: 'Do you have a fever?', patient_id: CAP });
    expect(llm.requests.length - before).toBe(2);
    expect(res.guard).toBe('redacted');
    expect(res.response).toBe(FEVER_FIRST);
    expect(res.revealed.map((r) => r.id)).toEqual(['fever-rigors']);
    await fetch(`${sim.url}/sessions/${res.session_id}`, { method: 'DELETE' });
  });
});

describe('a session with a turn in progress', () => {
  it('is neither expired nor dropped while the LLM answers past the TTL; the TTL counts from the turn’s end', async () => {
    llm.respond = () => FEVER_FIRST;
    const first = await turn(sim.url, { message: 'Do you have a fever?', patient_id: CAP });
    const id = first.session_id;
    // The next reply is held until the clock has passed the TTL (2 s) several times over.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const asked = llm.requests.length;
    llm.respond = async () => {
      await held;
      return 'Three days now, and the phlegm is rusty.';
    };
    const second = postJson(`${sim.url}/patient`, {
      message: 'How long have you had the cough?',
      patient_id: CAP,
      session_id: id,
    });
    await waitFor(() => llm.requests.length > asked);
    clock += 10_000;
    // A lookup, the sweeper and a new session at the cap (2) all find it busy, not idle.
    const during = await fetch(`${sim.url}/sessions/${id}`);
    expect(during.status).toBe(200);
    expect(sim.service.sessions.sweep(clock)).toEqual([]);
    llm.respond = () => 'Hello doctor.';
    const other = await turn(sim.url, { message: 'Hello', patient_id: CAP });
    const full = await postJson(`${sim.url}/patient`, { message: 'Hello', patient_id: CAP });
    expect(full.status).toBe(503);
    release();
    const res = await second;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ session_id: id, turn: 2, new_session: false });
    const after = (await (await fetch(`${sim.url}/sessions/${id}`)).json()) as SessionBody;
    expect(after.turns).toBe(2);
    expect(after.revealed.map((r) => r.id)).toEqual(['fever-rigors', 'cough-sputum']);
    expect(after.transcript.map((t) => t.patient)).toEqual([
      FEVER_FIRST,
      'Three days now, and the phlegm is rusty.',
    ]);
    expect(after.expires_at).toBe(new Date(clock + 2000).toISOString());
    clock += 1999;
    expect((await fetch(`${sim.url}/sessions/${id}`)).status).toBe(200);
    clock += 1;
    expect((await fetch(`${sim.url}/sessions/${id}`)).status).toBe(404);
    await fetch(`${sim.url}/sessions/${other.session_id}`, { method: 'DELETE' });
  });
});
