import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LlmClient, type ChatBackend } from '@clinicalsuite/kit/llm';
import { z } from 'zod';
import { currentTimeSkill, summarizeSkill } from '../../services/task-agent/src/adapters/skills.js';
import { executeRun, stepSchema, type RunLimits } from '../../services/task-agent/src/domain/plan-act.js';
import { grammarSchema, type AnySkill, type Skill } from '../../services/task-agent/src/domain/skills.js';
import type { LogLevel } from '../../services/task-agent/src/domain/types.js';
import { TOKEN, startLlm, type LlmTestServer } from '../llm/helpers.js';

// The plan-and-act loop against the real text LLM on the tiny generated model: its steps are
// gibberish, but the grammar keeps every one a well-formed action naming a real skill, so the loop
// really calls skills, logs them and ends with an answer on the last step.

let llm: LlmTestServer;
let client: LlmClient;

beforeAll(async () => {
  llm = await startLlm({ MAX_CONCURRENCY: '1' });
  client = new LlmClient({ baseUrl: llm.url, token: TOKEN, timeoutMs: 60_000, retries: 0, backoffMs: 10 });
}, 120_000);
afterAll(async () => {
  await llm.close();
});

const LIMITS: RunLimits = {
  maxSteps: 3,
  stepMaxTokens: 1024,
  // Sampled with a fixed seed: greedy decoding of the tiny model finishes at once; this seed makes
  // it call a skill first (the same on every run: the LLM samples with the request's seed).
  temperature: 1,
  seed: 1,
  observationChars: 500,
  thoughtChars: 30,
  answerChars: 120,
};

/** A skill that records its calls (a real skill: it answers from its input). */
function echoSkill(calls: string[]): Skill<{ word: string }> {
  return {
    name: 'echo_word',
    description: 'Answers the word it is given, reversed.',
    service: null,
    input: z.object({ word: z.string().max(20) }),
    run: (input) => {
      calls.push(input.word);
      return Promise.resolve(Array.from(input.word).reverse().join(''));
    },
  };
}

function collect(): {
  logs: { level: LogLevel; message: string }[];
  log: (l: LogLevel, m: string) => Promise<void>;
} {
  const logs: { level: LogLevel; message: string }[] = [];
  return {
    logs,
    log: (level, message) => {
      logs.push({ level, message });
      return Promise.resolve();
    },
  };
}

describe('step grammar', () => {
  it('offers each skill with its input schema, and only `finish` on the last step', () => {
    const skills: AnySkill[] = [currentTimeSkill(), echoSkill([])];
    const all = stepSchema(skills, LIMITS, false) as { properties: { action: { oneOf: unknown[] } } };
    expect(all.properties.action.oneOf).toHaveLength(3);
    expect(JSON.stringify(all)).toContain('"const":"echo_word"');
    const last = stepSchema(skills, LIMITS, true) as {
      properties: { action: { properties: { skill: unknown } } };
    };
    expect(last.properties.action.properties.skill).toEqual({ const: 'finish' });
  });

  it('turns zod inputs into the grammar subset: every property required, no extra properties', () => {
    const schema = grammarSchema(
      z.object({ a: z.string().max(5), b: z.number().int().min(1).max(3).default(2) }),
    );
    expect(schema).toEqual({
      type: 'object',
      properties: { a: { type: 'string', maxLength: 5 }, b: { type: 'integer' } },
      required: ['a', 'b'],
      additionalProperties: false,
    });
  });
});

describe('executeRun on the tiny model', () => {
  it('takes well-formed steps, calls skills, logs each call and finishes on the last step', async () => {
    const calls: string[] = [];
    const { logs, log } = collect();
    const skillEvents: string[] = [];
    const result = await executeRun({
      title: 'Reverse a word',
      description: 'Use echo_word on "abc", then answer.',
      skills: [echoSkill(calls), currentTimeSkill()],
      backend: client,
      model: 'alpha-2-9b-it',
      limits: LIMITS,
      signal: new AbortController().signal,
      now: () => Date.now(),
      events: { log, skillCalled: (skill, outcome) => skillEvents.push(`${skill}:${outcome}`) },
    });
    expect(result.status).toBe('done');
    if (result.status !== 'done') return;
    expect(result.output.length).toBeGreaterThan(0);
    expect(result.output.length).toBeLessThanOrEqual(LIMITS.answerChars);
    expect(result.steps).toBeLessThanOrEqual(LIMITS.maxSteps);
    // Each step is logged; the run's steps were actions (skill calls or refused inputs) or the answer.
    expect(logs.filter((l) => /^step \d/.test(l.message)).length).toBeGreaterThanOrEqual(result.steps);
    expect(logs.at(-1)?.message).toMatch(/finished with an answer/);
    // Every skill call the model made is logged with its name and outcome.
    for (const e of skillEvents)
      expect(logs.some((l) => l.message.includes(e.split(':')[0] ?? ''))).toBe(true);
    expect(calls.length).toBe(skillEvents.filter((e) => e === 'echo_word:ok').length);
    expect(calls.length).toBeGreaterThan(0);
    expect(logs.some((l) => l.message.startsWith('step 1: calling skill echo_word {"word":'))).toBe(true);
  }, 60_000);

  it('does not run a call it already answered: it points the LLM at the observation and finishes', async () => {
    // One possible input, so every call of the skill is the same call. This seed makes the tiny
    // model call it twice running (pick another if the prompt changes: the test says if none did).
    const calls: string[] = [];
    const lookUp: Skill<{ code: 'I10' }> = {
      name: 'look_up',
      description: 'Looks up the code I10.',
      service: null,
      input: z.object({ code: z.literal('I10') }),
      run: (input) => {
        calls.push(input.code);
        return Promise.resolve('I10: Essential (primary) hypertension');
      },
    };
    const { logs, log } = collect();
    const result = await executeRun({
      title: 'Look up I10',
      description: 'Use look_up, then answer.',
      skills: [lookUp],
      backend: client,
      model: 'alpha-2-9b-it',
      limits: { ...LIMITS, maxSteps: 5, seed: 14 },
      signal: new AbortController().signal,
      now: () => Date.now(),
      events: { log },
    });
    const messages = logs.map((l) => `${l.level} ${l.message}`);
    expect(messages).toEqual([
      'info step 1: calling skill look_up {"code":"I10"}',
      expect.stringMatching(/^info step 1: skill look_up answered in [\d.]+ s \(37 characters\)$/),
      'warn step 2: skill look_up was called with this input at step 1; not called again',
      expect.stringMatching(/^info step 3: finished with an answer/),
    ]);
    expect(calls).toEqual(['I10']);
    expect(result).toMatchObject({ status: 'done', steps: 3 });
  }, 60_000);

  it('stops at once when aborted, the LLM call in flight included', async () => {
    const controller = new AbortController();
    const { log } = collect();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('cancelled by the test')), 30);
    await expect(
      executeRun({
        title: 't',
        description: 'd',
        skills: [],
        backend: client,
        model: 'alpha-2-9b-it',
        limits: { ...LIMITS, stepMaxTokens: 3000, answerChars: 20_000 },
        signal: controller.signal,
        now: () => Date.now(),
        events: { log },
      }),
    ).rejects.toThrow('cancelled by the test');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('logs a failing skill as an error and goes on to an answer', async () => {
    const failing: Skill<{ q: string }> = {
      name: 'always_fails',
      description: 'Fails.',
      service: null,
      input: z.object({ q: z.string().max(10) }),
      run: () => Promise.reject(new Error('upstream said no')),
    };
    const { logs, log } = collect();
    const result = await executeRun({
      title: 'Try the failing skill',
      description: 'Call always_fails.',
      skills: [failing],
      backend: client,
      model: 'alpha-2-9b-it',
      limits: LIMITS,
      signal: new AbortController().signal,
      now: () => Date.now(),
      events: { log },
    });
    expect(result.status).toBe('done');
    const failures = logs.filter((l) => l.message.includes('always_fails failed: upstream said no'));
    const calledIt = logs.some((l) => l.message.includes('calling skill always_fails'));
    expect(failures.length > 0).toBe(calledIt);
    if (calledIt) expect(failures[0]?.level).toBe('error');
  }, 60_000);

  it('summarize sends the text to the LLM and answers what it wrote', async () => {
    const backend: ChatBackend = client;
    const skill = summarizeSkill(backend, () => 'alpha-2-9b-it');
    const answer = await skill.run(
      { text: 'Bệnh nhân sốt 39 độ, ho khan 3 ngày.', max_words: 5 },
      { signal: new AbortController().signal, now: () => Date.now() },
    );
    expect(typeof answer).toBe('string');
    expect(answer.length).toBeGreaterThan(0);
  }, 30_000);
});
