/**
 * Text the store can not keep: PostgreSQL's `text` has no NUL character (U+0000). A request carrying
 * one is refused with 422 naming the field before any work (a chat never reaches the LLM); text the
 * LLM produces with one is stored without it, so a run finishes and a chat turn is kept. On SQLite
 * and on PostgreSQL alike. The LLM is a stand-in here: only it can be made to answer a NUL.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDatabase, startPostgres, type TestPostgres } from '../fixtures/postgres.js';
import { api, startTaskAgent, tempSqlitePath, until, type TaskAgentTestServer } from './helpers.js';
import { RUNNABLE_KINDS } from './store-helpers.js';

const STEP = { thought: 'done\u0000 thinking', action: { skill: 'finish', answer: 'the\u0000 answer' } };
let llm: Server;
let llmUrl: string;
let completions = 0;
let postgres: TestPostgres | undefined;

beforeAll(async () => {
  // An OpenAI-compatible LLM whose every answer holds a NUL character.
  llm = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const json = (value: unknown): void => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.url === '/health') {
        json({ status: 'healthy' });
        return;
      }
      if (req.url === '/v1/models') {
        json({ object: 'list', data: [{ id: 'stand-in' }] });
        return;
      }
      if (req.url === '/v1/chat/completions') {
        completions += 1;
        const request = JSON.parse(body) as { response_format?: unknown };
        const content = request.response_format === undefined ? 'hel\u0000lo' : JSON.stringify(STEP);
        json({
          id: 'c1',
          object: 'chat.completion',
          created: 0,
          model: 'stand-in',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        });
        return;
      }
      res.writeHead(404);
      res.end();
    });
  });
  await new Promise<void>((resolve) => llm.listen(0, '127.0.0.1', resolve));
  const address = llm.address();
  llmUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  if (RUNNABLE_KINDS.includes('postgresql')) postgres = await startPostgres();
}, 120_000);
afterAll(async () => {
  postgres?.stop();
  llm.closeAllConnections();
  await new Promise((resolve) => llm.close(resolve));
});

const stores: [string, () => Promise<Record<string, string>>][] = RUNNABLE_KINDS.map((kind) =>
  kind === 'sqlite'
    ? ['SQLite', () => Promise.resolve({ TASK_AGENT_DB: tempSqlitePath() })]
    : [
        'PostgreSQL',
        async () => {
          if (postgres === undefined) throw new Error('PostgreSQL did not start');
          return { DATABASE_URL: await createDatabase(postgres, 'task_agent_text') };
        },
      ],
);

describe.each(stores)('NUL characters on %s', (_name, storeEnv) => {
  let agent: TaskAgentTestServer;
  beforeAll(async () => {
    agent = await startTaskAgent({ LLM_URL: llmUrl, ...(await storeEnv()) });
  }, 60_000);
  afterAll(async () => {
    await agent.close();
  });

  it('refuses them in a title, a description, a schedule and a chat message with 422 naming the field', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['/api/v1/tasks', { title: 'bad\u0000title' }, 'title'],
      ['/api/v1/tasks', { title: 'ok', description: 'pt\u0000x' }, 'description'],
      ['/api/v1/schedules', { name: 'n\u0000', cron: '0 2 * * *', title: 't' }, 'name'],
      ['/api/v1/chat', { message: 'hi\u0000' }, 'message'],
    ];
    const before = completions;
    for (const [path, body, field] of cases) {
      const res = await api(agent.url, 'POST', path, body);
      expect([path, field, res.status]).toEqual([path, field, 422]);
      expect(res.body['detail']).toEqual([
        expect.objectContaining({
          loc: ['body', field],
          msg: `${field} must not contain NUL characters (\\u0000)`,
        }),
      ]);
    }
    expect(completions).toBe(before); // the chat never reached the LLM
    expect((await api(agent.url, 'GET', '/api/v1/tasks')).body['tasks']).toEqual([]);
  });

  it("stores an LLM's answer without them: the chat turn is kept and the run finishes", async () => {
    const chat = await api(agent.url, 'POST', '/api/v1/chat', { message: 'hello', session_id: 's1' });
    expect(chat.status).toBe(200);
    expect(chat.body['response']).toBe('hello');
    const again = await api(agent.url, 'POST', '/api/v1/chat', { message: 'again', session_id: 's1' });
    expect(again.status).toBe(200);

    const created = await api(agent.url, 'POST', '/api/v1/tasks', { title: 'Answer with a NUL' });
    expect(created.status).toBe(201);
    const id = (created.body['task'] as { id: number }).id;
    const detail = await until(async () => {
      const d = (await api(agent.url, 'GET', `/api/v1/tasks/${id}`)).body as {
        task: { status: string; result: string | null; attempts: number };
        runs: { status: string; output: string | null }[];
        logs: { message: string }[];
      };
      return ['done', 'failed', 'cancelled'].includes(d.task.status) ? d : undefined;
    });
    expect(detail.task).toMatchObject({ status: 'done', result: 'the answer', attempts: 1 });
    expect(detail.runs).toEqual([expect.objectContaining({ status: 'done', output: 'the answer' })]);
    expect(detail.logs.map((l) => l.message).join('\n')).not.toContain('\u0000');
  });
});
