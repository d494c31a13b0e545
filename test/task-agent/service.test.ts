import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { createDatabase, startPostgres, type TestPostgres } from '../fixtures/postgres.js';
import { TOKEN as LLM_TOKEN, occupyLlm, startLlm, type LlmTestServer } from '../llm/helpers.js';
import { startCodesearchSlice } from '../agent/subservice-helpers.js';
import type { CodesearchTestServer } from '../codesearch/helpers.js';
import {
  TASK_AGENT_TOKEN,
  api,
  startTaskAgent,
  tempSqlitePath,
  until,
  type TaskAgentTestServer,
} from './helpers.js';

// The task agent over a real socket with the real text LLM (tiny model) and the real code search,
// on SQLite and on PostgreSQL (Debian's server, started here): the same tests on both stores.

interface Task {
  id: number;
  status: string;
  result: string | null;
  schedule_id: number | null;
  attempts: number;
}
interface Run {
  id: number;
  task_id: number;
  status: string;
  output: string | null;
  error: string | null;
  steps: number;
}
interface Log {
  level: string;
  message: string;
  run_id: number | null;
}

let llm: LlmTestServer;
let codesearch: CodesearchTestServer;
let postgres: TestPostgres | undefined;

beforeAll(async () => {
  llm = await startLlm({ MAX_CONCURRENCY: '1', QUEUE_SIZE: '16' });
  codesearch = await startCodesearchSlice();
  postgres = await startPostgres();
}, 180_000);
afterAll(async () => {
  await codesearch.close();
  await llm.close();
  postgres?.stop();
});

const stores: [string, () => Promise<Record<string, string>>][] = [
  ['SQLite', () => Promise.resolve({ TASK_AGENT_DB: tempSqlitePath() })],
  [
    'PostgreSQL',
    async () => {
      if (postgres === undefined) throw new Error('PostgreSQL did not start');
      return { DATABASE_URL: await createDatabase(postgres, 'task_agent') };
    },
  ],
];

async function detail(url: string, id: number): Promise<{ task: Task; logs: Log[]; runs: Run[] }> {
  const r = await api(url, 'GET', `/api/v1/tasks/${id}`);
  expect(r.status).toBe(200);
  return r.body as unknown as { task: Task; logs: Log[]; runs: Run[] };
}

async function finished(url: string, id: number): Promise<{ task: Task; logs: Log[]; runs: Run[] }> {
  return until(
    async () => {
      const d = await detail(url, id);
      return ['done', 'failed', 'cancelled'].includes(d.task.status) ? d : undefined;
    },
    30_000,
    `task ${id} finished`,
  );
}

function calledSkill(logs: readonly Log[]): boolean {
  return logs.some((l) => /^step \d+: calling skill \w+ \{/.test(l.message));
}

async function llmWaiting(): Promise<number> {
  const res = await fetch(`${llm.url}/status`, { headers: { authorization: `Bearer ${LLM_TOKEN}` } });
  return ((await res.json()) as { slots: { waiting: number } }).slots.waiting;
}

describe.each(stores)('task agent on %s', (_name, storeEnv) => {
  let agent: TaskAgentTestServer;

  beforeAll(async () => {
    agent = await startTaskAgent({
      LLM_URL: llm.url,
      CODE_SEARCH_URL: codesearch.url,
      ...(await storeEnv()),
    });
  }, 60_000);
  afterAll(async () => {
    await agent.close();
  });

  it('asks for its token on the API but not on / and /health', async () => {
    expect((await fetch(`${agent.url}/api/v1/tasks`)).status).toBe(401);
    const wrong = await fetch(`${agent.url}/api/v1/tasks`, {
      headers: { authorization: 'Bearer nope-nope-nope' },
    });
    expect(wrong.status).toBe(401);
    expect((await fetch(`${agent.url}/health`)).status).toBe(200);
    expect((await fetch(`${agent.url}/`)).status).toBe(200);
  });

  it('runs tasks with the LLM over skills: a skill call in the logs, a run with output, the result', async () => {
    // The tiny model samples its plan (seeded), so whether a given run calls a skill first is a
    // matter of its random weights: a few tasks, and at least one of them must have called one.
    const runs: { task: Task; logs: Log[]; runs: Run[] }[] = [];
    for (let i = 0; i < 4 && !runs.some((d) => calledSkill(d.logs)); i++) {
      const created = await api(agent.url, 'POST', '/api/v1/tasks', {
        title: 'Find the ICD-10 code for essential hypertension',
        description: `Look the code up and answer it (${i}).`,
        priority: 7,
      });
      expect(created.status).toBe(201);
      const task = created.body['task'] as Task;
      expect(task.status).toBe('pending');
      runs.push(await finished(agent.url, task.id));
    }
    for (const d of runs) {
      expect(d.task.status).toBe('done');
      expect(d.runs).toHaveLength(1);
      const run = d.runs[0] as Run;
      expect(run.status).toBe('done');
      expect(run.output).toBe(d.task.result);
      expect((run.output ?? '').length).toBeGreaterThan(0);
      const messages = d.logs.map((l) => l.message);
      expect(messages).toContain('created through the API');
      expect(messages.some((m) => /^run \d+ done in/.test(m))).toBe(true);
    }
    const withSkill = runs.find((d) => calledSkill(d.logs));
    expect(withSkill).toBeDefined();
    // The call, then what the skill answered (or why it failed), both logged under the run.
    const call = withSkill?.logs.find((l) => /^step \d+: calling skill \w+ \{/.test(l.message));
    expect(call?.run_id).toBe(withSkill?.runs[0]?.id);
    const metrics = await (await fetch(`${agent.url}/metrics`)).text();
    expect(metrics).toMatch(/task_agent_skill_calls_total\{[^}]*skill="\w+"[^}]*\} [1-9]/);
  }, 90_000);

  it('refuses bad input with the field named, and unknown tasks with 404', async () => {
    const empty = await api(agent.url, 'POST', '/api/v1/tasks', { title: '   ' });
    expect(empty.status).toBe(422);
    expect(JSON.stringify(empty.body)).toContain('title must not be empty');
    const priority = await api(agent.url, 'POST', '/api/v1/tasks', { title: 't', priority: 11 });
    expect(priority.status).toBe(422);
    expect(JSON.stringify(priority.body)).toContain('priority must be 1 to 10');
    const status = await api(agent.url, 'GET', '/api/v1/tasks?status=sleeping');
    expect([400, 422]).toContain(status.status);
    expect(JSON.stringify(status.body)).toContain('in_progress');
    expect((await api(agent.url, 'GET', '/api/v1/tasks/999999')).status).toBe(404);
    expect((await api(agent.url, 'POST', '/api/v1/tasks/999999/cancel')).status).toBe(404);
    expect((await api(agent.url, 'GET', '/api/v1/tasks/abc')).status).toBe(422);
    // The logs and runs of an unknown task are a 404 too, which their OpenAPI entries list (the fuzz
    // found them missing).
    expect((await api(agent.url, 'GET', '/api/v1/logs?task_id=999999')).status).toBe(404);
    expect((await api(agent.url, 'GET', '/api/v1/runs?task_id=999999')).status).toBe(404);
    const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as {
      paths: Record<string, { get: { responses: Record<string, unknown> } }>;
    };
    expect([
      doc.paths['/api/v1/logs']!.get.responses['404'],
      doc.paths['/api/v1/runs']!.get.responses['404'],
    ]).toEqual([expect.anything(), expect.anything()]);
  });

  it('filters by any name of a status group, and counts per group', async () => {
    const done = await api(agent.url, 'GET', '/api/v1/tasks?status=completed&limit=5');
    expect(done.status).toBe(200);
    const tasks = done.body['tasks'] as Task[];
    expect(tasks.length).toBeGreaterThan(0);
    expect(tasks.every((t) => t.status === 'done')).toBe(true);
    const stats = (await api(agent.url, 'GET', '/api/v1/stats')).body['stats'] as Record<string, number>;
    const all = (await api(agent.url, 'GET', '/api/v1/tasks?limit=500')).body['tasks'] as Task[];
    expect(stats['total']).toBe(all.length);
    expect(stats['done']).toBe(all.filter((t) => t.status === 'done').length);
  });

  it('cancels a running task at once, aborting the LLM call it waits on', async () => {
    const busy = occupyLlm(llm.url);
    try {
      const task = (await api(agent.url, 'POST', '/api/v1/tasks', { title: 'Wait for the LLM' })).body[
        'task'
      ] as Task;
      await until(async () =>
        (await detail(agent.url, task.id)).task.status === 'running' ? true : undefined,
      );
      // Its first step waits in the LLM's queue behind the blocker.
      await until(
        async () => ((await llmWaiting()) === 1 ? true : undefined),
        10_000,
        'the step queued at the LLM',
      );
      const started = Date.now();
      const cancel = await api(agent.url, 'POST', `/api/v1/tasks/${task.id}/cancel`);
      expect(cancel.status).toBe(200);
      expect(cancel.body['cancelled']).toBe(true);
      const d = await until(async () => {
        const x = await detail(agent.url, task.id);
        return x.runs[0]?.status === 'cancelled' ? x : undefined;
      }, 5000);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(d.task.status).toBe('cancelled');
      // The route stops the local run right after the store's cancel; a lease renewal in between
      // sees the cancel first and stops it without knowing who cancelled: either line is true.
      expect(d.logs.some((l) => /stopped: cancelled( by the API)?$/.test(l.message))).toBe(true);
      // A second cancel: already cancelled.
      expect((await api(agent.url, 'POST', `/api/v1/tasks/${task.id}/cancel`)).status).toBe(409);
      // Its LLM request left the LLM's queue: only the blocker is there.
      await until(
        async () => ((await llmWaiting()) === 0 ? true : undefined),
        3000,
        'the step left the LLM queue',
      );
    } finally {
      busy.release();
      await busy.done;
    }
  }, 40_000);

  it('runs a finished task again as a new run', async () => {
    const task = (await api(agent.url, 'POST', '/api/v1/tasks', { title: 'Twice' })).body['task'] as Task;
    await finished(agent.url, task.id);
    const again = await api(agent.url, 'POST', `/api/v1/tasks/${task.id}/run`);
    expect(again.status).toBe(202);
    const d = await until(async () => {
      const x = await detail(agent.url, task.id);
      return x.runs.length === 2 && x.task.status === 'done' ? x : undefined;
    }, 30_000);
    expect(d.runs.map((r) => r.status)).toEqual(['done', 'done']);
    expect(d.logs.map((l) => l.message)).toContain('queued again through the API');
    const pending = (await api(agent.url, 'POST', '/api/v1/tasks', { title: 'p' })).body['task'] as Task;
    const busyRun = await api(agent.url, 'POST', `/api/v1/tasks/${pending.id}/run`);
    expect([202, 409]).toContain(busyRun.status); // 409 while pending or running
    await finished(agent.url, pending.id);
  }, 60_000);

  it('deletes a finished task with its runs and logs; a pending or running one is 409, an unknown one 404', async () => {
    const task = (await api(agent.url, 'POST', '/api/v1/tasks', { title: 'Forget me' })).body['task'] as Task;
    // Just created: pending, or running already; either way not deletable yet.
    const early = await api(agent.url, 'DELETE', `/api/v1/tasks/${task.id}`);
    expect(early.status).toBe(409);
    expect(early.body['detail']).toMatch(/is pending or running: cancel it before deleting it/);
    await finished(agent.url, task.id);
    const res = await api(agent.url, 'DELETE', `/api/v1/tasks/${task.id}`);
    expect(res).toEqual({ status: 200, body: { deleted: true, id: task.id } });
    expect((await api(agent.url, 'GET', `/api/v1/tasks/${task.id}`)).status).toBe(404);
    expect((await api(agent.url, 'GET', `/api/v1/logs?task_id=${task.id}`)).status).toBe(404);
    const logs = (await api(agent.url, 'GET', '/api/v1/logs?limit=1000')).body['logs'] as {
      task_id: number;
    }[];
    const runs = (await api(agent.url, 'GET', '/api/v1/runs?limit=1000')).body['runs'] as {
      task_id: number;
    }[];
    expect([...logs, ...runs].filter((e) => e.task_id === task.id)).toEqual([]);
    expect((await api(agent.url, 'DELETE', `/api/v1/tasks/${task.id}`)).status).toBe(404);
  }, 60_000);

  it('fires a cron schedule: a task per firing, listed with its next run', async () => {
    const bad = await api(agent.url, 'POST', '/api/v1/schedules', {
      name: 'x',
      cron: 'every day',
      title: 't',
    });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain('cron');
    const zone = await api(agent.url, 'POST', '/api/v1/schedules', {
      name: 'x',
      cron: '0 7 * * *',
      timezone: 'Mars/Olympus',
      title: 't',
    });
    expect(zone.status).toBe(422);
    const created = await api(agent.url, 'POST', '/api/v1/schedules', {
      name: 'every second',
      cron: '* * * * * *',
      timezone: 'Asia/Ho_Chi_Minh',
      title: 'Scheduled check',
      priority: 3,
    });
    expect(created.status).toBe(201);
    const schedule = created.body['schedule'] as { id: number; next_run_at: string | null };
    expect(schedule.next_run_at).not.toBeNull();
    const task = await until(async () => {
      const tasks = (await api(agent.url, 'GET', '/api/v1/tasks?limit=500')).body['tasks'] as Task[];
      return tasks.find((t) => t.schedule_id === schedule.id);
    }, 10_000);
    const d = await detail(agent.url, task.id);
    expect(d.logs.some((l) => l.message.includes('every second'))).toBe(true);
    const listed = (await api(agent.url, 'GET', '/api/v1/schedules')).body['schedules'] as {
      id: number;
      last_task_id: number | null;
      last_run_at: string | null;
    }[];
    const mine = listed.find((s) => s.id === schedule.id);
    expect(mine?.last_run_at).not.toBeNull();
    expect(
      (await api(agent.url, 'PATCH', `/api/v1/schedules/${schedule.id}`, { enabled: false })).status,
    ).toBe(200);
    expect((await api(agent.url, 'DELETE', `/api/v1/schedules/${schedule.id}`)).status).toBe(200);
    expect((await api(agent.url, 'DELETE', `/api/v1/schedules/${schedule.id}`)).status).toBe(404);
    expect(
      (await api(agent.url, 'PATCH', `/api/v1/schedules/${schedule.id}`, { enabled: true })).status,
    ).toBe(404);
    // Both 404s are in the OpenAPI document (the fuzz found them missing).
    const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    const byId = doc.paths['/api/v1/schedules/{id}']!;
    expect([Object.keys(byId['patch']!.responses), Object.keys(byId['delete']!.responses)]).toEqual([
      expect.arrayContaining(['404']),
      expect.arrayContaining(['404']),
    ]);
  }, 40_000);

  it('chats in sessions kept in the store, and clears them', async () => {
    const first = await api(agent.url, 'POST', '/api/v1/chat', { message: 'Xin chào' });
    expect(first.status).toBe(200);
    const sessionId = first.body['session_id'] as string;
    expect(typeof first.body['response']).toBe('string');
    // The agent answers as itself, the name /v1/models lists, not as the LLM's model file.
    expect(first.body['model']).toBe('task-agent');
    expect(agent.service.monitor.status.model).not.toBe('task-agent');
    const second = await api(agent.url, 'POST', '/api/v1/chat', {
      message: 'And again',
      session_id: sessionId,
    });
    expect(second.body['session_id']).toBe(sessionId);
    const history = await agent.service.store.chatHistory(sessionId, 10);
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(history[0]?.content).toBe('Xin chào');
    expect((await api(agent.url, 'DELETE', `/api/v1/chat/${sessionId}`)).body).toEqual({ cleared: true });
    expect((await api(agent.url, 'DELETE', `/api/v1/chat/${sessionId}`)).body).toEqual({ cleared: false });
    expect((await api(agent.url, 'POST', '/api/v1/chat', { message: '' })).status).toBe(422);
  }, 30_000);

  it('a chat message longer than the LLM’s context: 400 saying so, not a 502 (found by the OpenAPI fuzz)', async () => {
    const res = await api(agent.url, 'POST', '/api/v1/chat', { message: '0'.repeat(8000) });
    expect({ status: res.status, detail: res.body['detail'] }).toEqual({
      status: 400,
      detail: expect.stringContaining("does not fit the LLM's context") as unknown,
    });
  }, 30_000);

  it('answers the official openai SDK, whole and streamed', async () => {
    const client = new OpenAI({ baseURL: `${agent.url}/v1`, apiKey: TASK_AGENT_TOKEN, maxRetries: 0 });
    const whole = await client.chat.completions.create({
      model: 'task-agent',
      messages: [{ role: 'user', content: 'Hello' }],
      max_completion_tokens: 5,
      temperature: 0,
    });
    expect(whole.id).toMatch(/^chatcmpl-/);
    expect(whole.model).toBe('task-agent');
    expect(whole.choices[0]?.finish_reason).toBe('length');
    expect(whole.usage?.completion_tokens).toBe(5);
    const stream = await client.chat.completions.create({
      model: 'task-agent',
      messages: [{ role: 'user', content: 'Hello' }],
      max_completion_tokens: 5,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: number | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.model).toBe('task-agent');
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    expect(text).toBe(whole.choices[0]?.message.content);
    expect(finish).toBe('length');
    expect(usage).toBe(5);
    await expect(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 404 });
  }, 30_000);

  it('lists its skills and publishes them to the store for offline answers', async () => {
    const skills = (await api(agent.url, 'GET', '/api/v1/skills')).body['skills'] as { name: string }[];
    expect(skills.map((s) => s.name)).toEqual(['search_medical_codes', 'summarize', 'current_time']);
    expect((await agent.service.store.listSkills()).map((s) => s.name)).toEqual(skills.map((s) => s.name));
  });
});
