import type { ChatBackend, ChatMessage } from '@clinicalsuite/kit/llm';
import { z } from 'zod';
import { FINISH, grammarSchema, type AnySkill } from './skills.js';
import type { LogLevel } from './types.js';

/**
 * One run of a task: a bounded plan-and-act loop. Each step the LLM answers one JSON object
 * `{thought, action}` under a grammar built from the skills' schemas; the action calls a skill
 * (its answer becomes the next observation) or finishes with the answer. The last step may only
 * finish. A call that repeats one already answered in this run (same skill, same input) is not
 * run again: the LLM is pointed at the observation it has, and its next step may only finish.
 * Small models otherwise ask the same question until the steps run out. Every step, skill call
 * and failure is logged to the task. Aborting `signal` (cancel, time budget, lost lease) stops the
 * loop at once, the LLM call in flight included: the function then throws the signal's reason.
 */

export interface RunLimits {
  readonly maxSteps: number;
  readonly stepMaxTokens: number;
  readonly temperature: number;
  /** Fixed sampling seed (reproducible runs); each step adds its number to it. */
  readonly seed?: number;
  /** Characters of a skill's answer the LLM reads back. */
  readonly observationChars: number;
  readonly thoughtChars: number;
  readonly answerChars: number;
}

export interface RunEvents {
  /** Writes a task log line (stored; shown to the task's owner). */
  log(level: LogLevel, message: string): Promise<void>;
  /** A skill finished (metrics). */
  skillCalled?(skill: string, outcome: 'ok' | 'error' | 'invalid_input', seconds: number): void;
  /** An LLM step finished (metrics). */
  stepDone?(outcome: 'action' | 'finish' | 'unparsable'): void;
}

export interface RunInput {
  readonly title: string;
  readonly description: string;
  readonly skills: readonly AnySkill[];
  readonly backend: ChatBackend;
  readonly model: string;
  readonly limits: RunLimits;
  readonly signal: AbortSignal;
  readonly now: () => number;
  readonly events: RunEvents;
}

export type RunResult =
  | { readonly status: 'done'; readonly output: string; readonly steps: number }
  | { readonly status: 'failed'; readonly error: string; readonly steps: number };

const stepShape = z.object({
  thought: z.string(),
  action: z.object({ skill: z.string(), input: z.unknown().optional(), answer: z.string().optional() }),
});

/** The JSON Schema of one step; `finishOnly` for the last step. */
export function stepSchema(
  skills: readonly AnySkill[],
  limits: Pick<RunLimits, 'thoughtChars' | 'answerChars'>,
  finishOnly: boolean,
): Record<string, unknown> {
  const finish = {
    type: 'object',
    properties: {
      skill: { const: FINISH },
      answer: { type: 'string', maxLength: limits.answerChars, description: 'The final answer for the user' },
    },
    required: ['skill', 'answer'],
    additionalProperties: false,
  };
  const calls = finishOnly
    ? []
    : skills.map((s) => ({
        type: 'object',
        properties: { skill: { const: s.name }, input: grammarSchema(s.input) },
        required: ['skill', 'input'],
        additionalProperties: false,
      }));
  return {
    type: 'object',
    properties: {
      thought: { type: 'string', maxLength: limits.thoughtChars, description: 'Why this action, briefly' },
      action: calls.length === 0 ? finish : { oneOf: [...calls, finish] },
    },
    required: ['thought', 'action'],
    additionalProperties: false,
  };
}

export function systemPrompt(skills: readonly AnySkill[], maxSteps: number): string {
  const list = skills
    .map((s) => `- ${s.name}: ${s.description}\n  input: ${JSON.stringify(grammarSchema(s.input))}`)
    .join('\n');
  return [
    "You are ClinicalSuite's task agent. You carry out one task for a clinician, one action per step.",
    `Each step, answer with one JSON object {"thought": ..., "action": ...}. The action either calls a skill ({"skill": <name>, "input": {...}}) or ends the task ({"skill": "${FINISH}", "answer": <the final answer>}).`,
    `You have at most ${maxSteps} steps; the last one must finish.`,
    'Use the skills to look things up instead of guessing. Never invent clinical facts, codes or results: if a skill failed or found nothing, say so in the answer.',
    'Never call a skill again with an input you already used: its observation is already above.',
    skills.length === 0 ? 'No skills are available: answer from the task alone.' : `Skills:\n${list}`,
  ].join('\n');
}

function clip(text: string, max: number): { text: string; cut: boolean } {
  return text.length <= max ? { text, cut: false } : { text: `${text.slice(0, max)}…`, cut: true };
}

export async function executeRun(input: RunInput): Promise<RunResult> {
  const { skills, limits, events, signal } = input;
  const byName = new Map(skills.map((s) => [s.name, s]));
  const messages: ChatMessage[] = [
    { role: 'system', content: systemPrompt(skills, limits.maxSteps) },
    { role: 'user', content: `Task: ${input.title}\n\n${input.description}`.trim() },
  ];
  /** The calls answered so far in this run (skill and input) and the step of each. */
  const answered = new Map<string, number>();
  let finishNext = false;
  for (let step = 1; step <= limits.maxSteps; step++) {
    signal.throwIfAborted();
    const last = step === limits.maxSteps || finishNext;
    const completion = await input.backend.complete(
      {
        model: input.model,
        messages,
        temperature: limits.temperature,
        maxTokens: limits.stepMaxTokens,
        ...(limits.seed === undefined ? {} : { seed: limits.seed + step }),
        jsonSchema: { name: last ? 'final_step' : 'step', schema: stepSchema(skills, limits, last) },
      },
      signal,
    );
    signal.throwIfAborted();
    messages.push({ role: 'assistant', content: completion.text });
    const parsed = parseStep(completion.text);
    if (parsed === undefined) {
      events.stepDone?.('unparsable');
      const why =
        completion.finishReason === 'length'
          ? `it was cut at ${limits.stepMaxTokens} tokens (TASK_AGENT_STEP_MAX_TOKENS)`
          : 'it is not the step JSON';
      await events.log('warn', `step ${step}: the LLM's answer could not be read: ${why}`);
      messages.push({
        role: 'user',
        content: `Your last answer could not be read (${why}). Answer with one JSON object {"thought", "action"}.`,
      });
      continue;
    }
    const { action } = parsed;
    if (action.skill === FINISH) {
      events.stepDone?.('finish');
      const answer = (action.answer ?? '').trim();
      if (answer !== '') {
        await events.log('info', `step ${step}: finished with an answer (${answer.length} characters)`);
        return { status: 'done', output: answer, steps: step };
      }
      await events.log('warn', `step ${step}: finished with an empty answer`);
      messages.push({ role: 'user', content: 'The answer is empty. Finish with the answer for the user.' });
      continue;
    }
    events.stepDone?.('action');
    const skill = byName.get(action.skill);
    if (skill === undefined) {
      await events.log(
        'warn',
        `step ${step}: the LLM asked for an unknown skill "${action.skill.slice(0, 60)}"`,
      );
      messages.push({
        role: 'user',
        content: `There is no skill "${action.skill}". Skills: ${[...byName.keys()].join(', ') || 'none'}.`,
      });
      continue;
    }
    const args = skill.input.safeParse(action.input ?? {});
    if (!args.success) {
      const problems = args.error.issues
        .map((i) => `${i.path.join('.') || 'input'}: ${i.message}`)
        .join('; ');
      events.skillCalled?.(skill.name, 'invalid_input', 0);
      await events.log('warn', `step ${step}: skill ${skill.name} refused its input: ${problems}`);
      messages.push({ role: 'user', content: `Skill ${skill.name} refused the input: ${problems}` });
      continue;
    }
    const call = `${skill.name} ${JSON.stringify(args.data)}`;
    const before = answered.get(call);
    if (before !== undefined) {
      await events.log(
        'warn',
        `step ${step}: skill ${skill.name} was called with this input at step ${before}; not called again`,
      );
      messages.push({
        role: 'user',
        content: `You called ${skill.name} with this input at step ${before}; its observation is above. Finish with the answer now.`,
      });
      finishNext = true;
      continue;
    }
    await events.log(
      'info',
      `step ${step}: calling skill ${skill.name} ${clip(JSON.stringify(args.data), 300).text}`,
    );
    const started = input.now();
    try {
      const observation = await skill.run(args.data, { signal, now: input.now });
      const seconds = (input.now() - started) / 1000;
      events.skillCalled?.(skill.name, 'ok', seconds);
      const shown = clip(observation, limits.observationChars);
      await events.log(
        'info',
        `step ${step}: skill ${skill.name} answered in ${seconds.toFixed(2)} s (${observation.length} characters${shown.cut ? `, the LLM read the first ${limits.observationChars}` : ''})`,
      );
      messages.push({ role: 'user', content: `Observation from ${skill.name}:\n${shown.text}` });
      answered.set(call, step);
    } catch (error) {
      signal.throwIfAborted();
      const seconds = (input.now() - started) / 1000;
      events.skillCalled?.(skill.name, 'error', seconds);
      const message = error instanceof Error ? error.message : String(error);
      await events.log('error', `step ${step}: skill ${skill.name} failed: ${message}`);
      messages.push({ role: 'user', content: `Skill ${skill.name} failed: ${message}` });
    }
  }
  return {
    status: 'failed',
    error: `no answer within ${limits.maxSteps} steps (TASK_AGENT_MAX_STEPS)`,
    steps: limits.maxSteps,
  };
}

function parseStep(text: string): z.infer<typeof stepShape> | undefined {
  try {
    const result = stepShape.safeParse(JSON.parse(text));
    return result.success ? result.data : undefined;
  } catch {
    return undefined;
  }
}
