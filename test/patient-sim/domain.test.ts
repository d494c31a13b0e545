import { describe, expect, it } from '@jest/globals';
import { loadCases } from '../../services/patient-sim/src/adapters/case-files.js';
import { BUILTIN_CASES_DIR } from '../../services/patient-sim/src/config.js';
import { disclose, hasExamIntent, hasOrderIntent } from '../../services/patient-sim/src/domain/disclosure.js';
import { diagnosisTerms, findLeak, redact } from '../../services/patient-sim/src/domain/leak.js';
import {
  buildMessages,
  promptInstructions,
  promptView,
  systemPrompt,
  trimHistory,
} from '../../services/patient-sim/src/domain/prompt.js';
import { KeyedMutex, SessionStore } from '../../services/patient-sim/src/domain/sessions.js';
import { prepareText, matchesEn, matchesVi } from '../../services/patient-sim/src/domain/text.js';
import {
  EmptyReplyError,
  cleanReply,
  runTurn,
  withoutEcho,
} from '../../services/patient-sim/src/domain/turn.js';
import type { ChatBackend, CompletionRequest } from '@clinicalsuite/kit/llm';
import type { CaseFile } from '../../services/patient-sim/src/schemas/case.js';

const cases = loadCases([BUILTIN_CASES_DIR]);
const get = (id: string): CaseFile => {
  const c = cases.get(id);
  if (c === undefined) throw new Error(`no case ${id}`);
  return c.case;
};
const cap = get('en-cough-chest-pain-miller');
const dengue = get('vi-sot-ngay-5-hoa');
const tb = get('vi-ho-keo-dai-nam');
const acs = get('en-chest-pressure-chen');
const none = new Set<string>();
const ids = (items: readonly { id: string }[]) => items.map((i) => i.id);

describe('keyword matching', () => {
  it('matches Vietnamese with or without diacritics, and keeps syllables that differ only by marks apart', () => {
    expect(matchesVi(prepareText('Chị có bị sốt không?'), 'sốt')).toBe(true);
    expect(matchesVi(prepareText('chi co bi sot khong'), 'sốt')).toBe(true);
    expect(matchesVi(prepareText('ANH CÓ HO KHÔNG'), 'ho')).toBe(true);
    // "họ" (family name) is not "ho" (cough) when the message has its diacritics.
    expect(matchesVi(prepareText('Họ tên của anh là gì?'), 'ho')).toBe(false);
    // Whole words only.
    expect(matchesVi(prepareText('hoàn toàn bình thường'), 'ho')).toBe(false);
  });

  it('matches English case-insensitively with short inflections, but not inside other words', () => {
    expect(matchesEn(prepareText('Any COUGHING?'), 'cough')).toBe(true);
    expect(matchesEn(prepareText('Have you been feverish'), 'fever')).toBe(true);
    expect(matchesEn(prepareText('the painter'), 'pain')).toBe(false);
    expect(matchesEn(prepareText('a chest x-ray'), 'x-ray')).toBe(true);
  });
});

describe('disclosure', () => {
  it('a question about fever reveals the fever facts and nothing else', () => {
    const d = disclose(cap, 'Have you had a fever?', none);
    expect(ids(d.newFacts)).toEqual(['fever-rigors']);
    expect(d.findings).toEqual([]);
    const vi = disclose(dengue, 'Em sốt từ bao giờ?', none);
    expect(ids(vi.newFacts)).toEqual(['fever-course']);
    const unaccented = disclose(tb, 'anh co bi sot khong', none);
    expect(ids(unaccented.newFacts)).toEqual(['fever-sweats']);
  });

  it('greetings and questions about nothing in the case reveal nothing', () => {
    expect(disclose(cap, 'Good morning, I am Dr Lee.', none).newFacts).toEqual([]);
    expect(disclose(dengue, 'Chào em, chị là bác sĩ trực hôm nay.', none).newFacts).toEqual([]);
    expect(disclose(tb, 'Họ tên của anh là gì?', none).newFacts).toEqual([]);
  });

  it('does not reveal again what the session already revealed', () => {
    const d = disclose(cap, 'Tell me more about the fever and the cough', new Set(['fever-rigors']));
    expect(ids(d.newFacts)).toEqual(['cough-sputum']);
  });

  it('examination findings need the clinician to examine; investigations need an order', () => {
    expect(hasExamIntent('Let me listen to your chest')).toBe(true);
    expect(hasExamIntent('Tôi đo huyết áp cho anh nhé')).toBe(true);
    expect(hasExamIntent('Do you have chest pain?')).toBe(false);
    expect(hasOrderIntent("I'll order a chest X-ray")).toBe(true);
    expect(hasOrderIntent('Cho làm xét nghiệm công thức máu')).toBe(true);

    // Asking about chest pain is history, not an examination.
    const asked = disclose(cap, 'Where is the chest pain?', none);
    expect(ids(asked.newFacts)).toContain('pleuritic-pain');
    expect(asked.findings).toEqual([]);

    const examined = disclose(cap, 'Let me listen to your chest', none);
    expect(ids(examined.findings)).toEqual(['chest-exam']);
    expect(ids(examined.newFindings)).toEqual(['chest-exam']);

    const ordered = disclose(cap, "I'd like to order a chest x-ray", none);
    expect(ids(ordered.findings)).toEqual(['chest-xray']);

    const vitals = disclose(dengue, 'Chị đo sinh hiệu cho em nhé', none);
    expect(ids(vitals.findings)).toEqual(['vitals']);
    const repeated = disclose(dengue, 'Chị đo lại sinh hiệu', new Set(['vitals']));
    expect(ids(repeated.findings)).toEqual(['vitals']);
    expect(repeated.newFindings).toEqual([]);

    const labs = disclose(acs, "Let's send a troponin and get an ECG", none);
    expect(ids(labs.findings).sort()).toEqual(['ecg', 'troponin']);
  });
});

describe('the prompt', () => {
  const everything = (c: CaseFile) => c.facts;

  it.each([...cases.values()].map((l) => [l.case.id, l.case] as const))(
    '%s: never holds the diagnosis, its aliases or code, nor any finding result, even with every fact revealed',
    (_id, c) => {
      const messages = buildMessages({
        view: promptView(c),
        facts: everything(c),
        procedures: c.findings,
        history: [{ clinician: 'Hello', patient: 'Hello doctor' }],
        message: 'What do you think you have?',
        historyChars: 10_000,
      });
      const text = messages.map((m) => m.content).join('\n');
      for (const term of diagnosisTerms(c.diagnosis)) expect(findLeak(text, [term])).toBeNull();
      for (const f of c.findings) expect(text).not.toContain(f.result);
      // The view is built field by field: the diagnosis is not even in the object.
      expect(JSON.stringify(promptView(c))).not.toContain(c.diagnosis.icd10);
    },
  );

  it('holds the facts revealed and not the others', () => {
    const fever = cap.facts.filter((f) => f.id === 'fever-rigors');
    const prompt = systemPrompt({ view: promptView(cap), facts: fever, procedures: [] });
    expect(prompt).toContain(fever[0]!.text);
    expect(prompt).toContain(cap.chief_complaint);
    expect(prompt).toContain(cap.demographics.name);
    for (const f of cap.facts.filter((x) => x.id !== 'fever-rigors')) expect(prompt).not.toContain(f.text);
    // In the case's language.
    expect(systemPrompt({ view: promptView(dengue), facts: [], procedures: [] })).toContain('Bạn đóng vai');
  });

  it('sends the newest exchanges that fit, oldest first, then the message', () => {
    const history = [
      { clinician: 'a'.repeat(50), patient: 'b'.repeat(50) },
      { clinician: 'c'.repeat(30), patient: 'd'.repeat(30) },
      { clinician: 'e'.repeat(10), patient: 'f'.repeat(10) },
    ];
    expect(trimHistory(history, 80).map((e) => e.clinician[0])).toEqual(['c', 'e']);
    expect(trimHistory(history, 10)).toEqual([]);
    const messages = buildMessages({
      view: promptView(cap),
      facts: [],
      procedures: [],
      history,
      message: 'next',
      historyChars: 80,
    });
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'next' });
  });
});

describe('the reply check', () => {
  const terms = diagnosisTerms(dengue.diagnosis);

  it('finds the diagnosis with or without diacritics, by name, alias or code', () => {
    expect(findLeak('Chắc em bị sốt xuất huyết rồi bác sĩ ơi', terms)).not.toBeNull();
    expect(findLeak('chac em bi sot xuat huyet roi', terms)).not.toBeNull();
    expect(findLeak('Is it Dengue?', terms)).not.toBeNull();
    expect(findLeak('code A97.1', terms)).not.toBeNull();
    expect(findLeak('Em sốt cao 5 ngày nay ạ.', terms)).toBeNull();
  });

  it('redacts the sentences that name it and keeps the rest', () => {
    expect(redact('Em sốt 5 ngày. Chắc là sốt xuất huyết. Em mệt lắm!', terms)).toBe(
      'Em sốt 5 ngày. Em mệt lắm!',
    );
    expect(redact('Dengue!', terms)).toBe('');
  });

  it('keeps only the patient’s words of a reply that runs on into the dialogue', () => {
    expect(cleanReply('Patient: It hurts here.\nDoctor: Where exactly?\nPatient: Here.')).toBe(
      'It hurts here.',
    );
    expect(cleanReply('Dạ em sốt 5 ngày.\nBác sĩ: Còn gì nữa?')).toBe('Dạ em sốt 5 ngày.');
    expect(cleanReply('Doctor: hello')).toBe('');
    expect(cleanReply('  plain reply  ')).toBe('plain reply');
    expect(cleanReply('- Dạ có ạ.\n- Em sốt mấy ngày?\n- Ba ngày.')).toBe('Dạ có ạ.');
  });
});

describe('a reply that echoes its instructions', () => {
  it('loses the echoed sentences and keeps the rest', () => {
    const input = { view: promptView(cap), facts: [], procedures: [] };
    const instructions = promptInstructions(input);
    const intro = systemPrompt(input).split('\n')[0]!;
    expect(instructions[0]).toBe(intro);
    expect(withoutEcho(`${intro} It hurts when I breathe.`, instructions)).toBe('It hurts when I breathe.');
    expect(withoutEcho(intro, instructions)).toBe('');
    expect(withoutEcho('It hurts when I breathe.', instructions)).toBe('It hurts when I breathe.');
    // A rule, or the complaint's label, echoed in front of the patient's words.
    expect(withoutEcho(`${instructions[1]!} Why you came: My chest hurts.`, instructions)).toBe(
      'My chest hurts.',
    );
  });

  it('keeps a fact or the complaint quoted word for word: they are the patient’s words', () => {
    const fever = cap.facts.find((f) => f.id === 'fever-rigors')!;
    const input = { view: promptView(cap), facts: [fever], procedures: [] };
    const instructions = promptInstructions(input);
    const own = [cap.chief_complaint, fever.text];
    for (const reply of [
      fever.text,
      "I've been feverish since yesterday, with shaking chills last night.",
      `Yes doctor. ${fever.text}`,
      cap.chief_complaint,
    ])
      expect(withoutEcho(reply, instructions, own)).toBe(reply);
    // The instructions hold none of the patient's words; the prompt holds both.
    const system = systemPrompt(input);
    for (const words of own) {
      expect(system).toContain(words);
      for (const i of instructions) expect(i).not.toContain(words);
    }
    // An echo of the intro around a fact loses the intro only.
    expect(withoutEcho(`${instructions[0]!}\n${fever.text}`, instructions, own)).toBe(fever.text);
  });
});

/** A backend that answers each call with the next scripted text. */
function scripted(...texts: string[]): ChatBackend & { readonly calls: CompletionRequest[] } {
  const calls: CompletionRequest[] = [];
  return {
    calls,
    complete: (request) => {
      calls.push(request);
      const text = texts[calls.length - 1];
      if (text === undefined) throw new Error(`unexpected call ${calls.length}`);
      return Promise.resolve({
        text,
        model: 'scripted',
        finishReason: 'stop',
        usage: { promptTokens: 10, completionTokens: 5 },
        attempts: 1,
        llmMs: 1,
      });
    },
  };
}

const settings = { model: 'm', temperature: 0, maxTokens: 50, historyChars: 6000, leakRetries: 1 };
const turnOn = (backend: ChatBackend, message: string, c: CaseFile = cap) =>
  runTurn(
    backend,
    { caseFile: c, revealed: none, history: [], message, settings },
    new AbortController().signal,
  );

describe('a turn', () => {
  const fever = cap.facts.find((f) => f.id === 'fever-rigors')!.text;
  const firstSentence = "I've been feverish since yesterday, with shaking chills last night.";

  it('sends a reply that quotes the fact it reveals word for word, whole', async () => {
    for (const reply of [
      firstSentence,
      fever,
      `Yes doctor. ${firstSentence} I didn't take my temperature at home.`,
    ]) {
      const backend = scripted(reply);
      const out = await turnOn(backend, 'Do you have a fever?');
      expect(out.reply).toBe(reply);
      expect(out.guard).toBe('none');
      expect(out.newFacts.map((f) => f.id)).toEqual(['fever-rigors']);
      expect(backend.calls).toHaveLength(1);
      // The fact was in the prompt the model answered from.
      expect(backend.calls[0]!.messages[0]!.content).toContain(fever);
    }
  });

  it('redacts a reply that named the diagnosis when its regeneration comes back empty', async () => {
    const backend = scripted(`Must be pneumonia, I suppose. ${firstSentence}`, '');
    const out = await turnOn(backend, 'Do you have a fever?');
    expect(backend.calls).toHaveLength(2);
    expect(out).toMatchObject({ reply: firstSentence, guard: 'redacted', calls: 2 });
    expect(out.usage).toEqual({ promptTokens: 20, completionTokens: 10 });
    // Only the diagnosis, then nothing: the case's own line.
    const replaced = await turnOn(scripted('Pneumonia.', ''), 'Do you have a fever?');
    expect(replaced).toMatchObject({ reply: cap.persona.unsure_reply, guard: 'replaced' });
    // Nothing usable at all is still an empty reply.
    await expect(turnOn(scripted('', ''), 'Do you have a fever?')).rejects.toThrow(EmptyReplyError);
  });

  it('still removes its echoed instructions', async () => {
    const system = systemPrompt({ view: promptView(cap), facts: [], procedures: [] });
    const intro = system.split('\n')[0]!;
    const out = await turnOn(scripted(`${intro} ${firstSentence}`), 'Do you have a fever?');
    expect(out.reply).toBe(firstSentence);
    // A reply that is nothing but the instructions is empty, and so is its regeneration.
    await expect(turnOn(scripted(intro, system), 'Do you have a fever?')).rejects.toThrow(EmptyReplyError);
  });
});

describe('sessions', () => {
  it('expire when idle for the TTL, and a turn keeps them alive', () => {
    const store = new SessionStore(1000, 10, 5);
    const created = store.create('s1', 'p', 'en', 0);
    expect(created.ok).toBe(true);
    const s = store.get('s1', 900)!;
    store.record(s, { clinician: 'q', patient: 'a' }, ['x'], { promptTokens: 3, completionTokens: 2 }, 900);
    expect(store.get('s1', 1800)?.turns).toHaveLength(1);
    const expired: string[] = [];
    expect(store.get('s1', 1900, (x) => expired.push(x.id))).toBeUndefined();
    expect(expired).toEqual(['s1']);
    expect(store.size).toBe(0);
  });

  it('refuse a new session at the cap rather than drop a live one; expired ones make room', () => {
    const store = new SessionStore(1000, 2, 5);
    store.create('a', 'p', 'en', 0);
    store.create('b', 'p', 'en', 500);
    expect(store.create('c', 'p', 'en', 600)).toEqual({ ok: false, reason: 'capacity' });
    expect(store.create('c', 'p', 'en', 1200).ok).toBe(true); // 'a' expired at 1000
    expect(store.get('b', 1200)).toBeDefined();
  });

  it('are not idle while a turn runs: neither expired nor dropped at the cap; the TTL counts from its end', () => {
    const store = new SessionStore(1000, 1, 5);
    const r = store.create('a', 'p', 'en', 0);
    if (!r.ok) throw new Error('not created');
    store.begin(r.session);
    // The LLM takes longer than the TTL: the sweeper, a lookup and a new session at the cap all
    // find it busy.
    expect(store.sweep(5000)).toEqual([]);
    expect(store.get('a', 5000)).toBe(r.session);
    expect(store.create('b', 'p', 'en', 5000)).toEqual({ ok: false, reason: 'capacity' });
    expect(store.expiresAt(r.session, 5000)).toBe(6000);
    store.record(
      r.session,
      { clinician: 'q', patient: 'a' },
      ['x'],
      { promptTokens: 1, completionTokens: 1 },
      5000,
    );
    store.end(r.session, 5000);
    expect(store.get('a', 5999)?.turns).toHaveLength(1);
    expect(store.expiresAt(r.session, 5999)).toBe(6000);
    expect(store.sweep(6000)).toEqual([r.session]);
    // A failed turn also counts as activity (and ends the busy mark).
    const b = store.create('b', 'p', 'en', 7000);
    if (!b.ok) throw new Error('not created');
    store.begin(b.session);
    store.end(b.session, 9000);
    expect(store.get('b', 9999)).toBe(b.session);
    expect(store.get('b', 10_000)).toBeUndefined();
  });

  it('records revealed ids once, in order, and sums usage', () => {
    const store = new SessionStore(1000, 2, 5);
    const r = store.create('a', 'p', 'en', 0);
    if (!r.ok) throw new Error('not created');
    store.record(
      r.session,
      { clinician: '1', patient: '1' },
      ['f1', 'f2'],
      { promptTokens: 10, completionTokens: 1 },
      1,
    );
    store.record(
      r.session,
      { clinician: '2', patient: '2' },
      ['f2', 'f3'],
      { promptTokens: 20, completionTokens: 2 },
      2,
    );
    expect(r.session.revealed).toEqual(['f1', 'f2', 'f3']);
    expect(r.session.turns.map((t) => t.turn)).toEqual([1, 2]);
    expect(r.session.usage).toEqual({ promptTokens: 30, completionTokens: 3 });
  });

  it('run one turn at a time per session, in arrival order', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    const slow = (name: string, ms: number) => () =>
      new Promise<void>((resolve) =>
        setTimeout(() => {
          order.push(name);
          resolve();
        }, ms),
      );
    await Promise.all([
      mutex.run('s', slow('first', 30)),
      mutex.run('s', slow('second', 1)),
      mutex.run('other', slow('other', 5)),
    ]);
    expect(order).toEqual(['other', 'first', 'second']);
    expect(mutex.keys).toBe(0);
  });
});
