import { ConflictError, NotFoundError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { z } from 'zod';
import { FINAL_STATUSES } from '../domain/types.js';
import {
  CancelResponseSchema,
  IdParamsSchema,
  ListLogsQuerySchema,
  ListTasksQuerySchema,
  LogSchema,
  RunSchema,
  SkillSchema,
  StatsSchema,
  TaskDetailSchema,
  TaskSchema,
  createTaskSchema,
} from '../schemas/api.js';
import {
  listTasksBody,
  logsBody,
  runsBody,
  skillsBody,
  statsBody,
  taskDetailBody,
  cancelTaskBody,
  deleteTaskBody,
} from '../store/queries.js';
import type { TaskStore } from '../store/types.js';
import { whenReady, type TaskAgentRuntime } from './runtime.js';

/**
 * Tasks, their runs and logs, counts and the skill catalogue: the operations the task proxy's
 * actions need. Reads go through store/queries.ts, which the proxy also uses when this agent is
 * offline, so both answer the same bodies.
 */
export function taskRoutes(rt: TaskAgentRuntime): AnyRoute[] {
  const store = (): TaskStore => rt.store.require();
  const now = (): Date => new Date(rt.now());
  const limits = {
    titleChars: rt.config.TASK_AGENT_MAX_TITLE_CHARS,
    descriptionChars: rt.config.TASK_AGENT_MAX_DESCRIPTION_CHARS,
  };
  return whenReady([
    defineRoute({
      method: 'get',
      path: '/api/v1/tasks',
      summary: 'Tasks, newest first, filtered by status group',
      description:
        '`status` takes any name of a group (pending/queued/waiting, running/in_progress/active, ' +
        'done/completed/success, failed/error, cancelled/canceled); `limit` defaults to 50.',
      tags: ['tasks'],
      query: ListTasksQuerySchema,
      response: z.object({ tasks: z.array(TaskSchema) }),
      handler: ({ query }) => listTasksBody(store(), query),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/tasks',
      summary: 'Create a task (pending; a worker picks it up)',
      tags: ['tasks'],
      body: createTaskSchema(limits),
      status: 201,
      response: z.object({ task: TaskSchema }),
      gated: false,
      handler: async ({ body, log }) => {
        const task = await store().createTask(body, now());
        await store().addLog(task.id, null, 'info', 'created through the API', now());
        rt.metrics.tasksCreated.inc({ source: 'api' });
        rt.workers.value?.wake();
        log.info({ task: task.id }, 'task created');
        return { task };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/tasks/:id',
      summary: 'A task with its logs and runs',
      tags: ['tasks'],
      params: IdParamsSchema,
      response: TaskDetailSchema,
      responses: { 404: { description: 'No such task' } },
      handler: ({ params }) => taskDetailBody(store(), params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/tasks/:id/cancel',
      summary: 'Cancel a pending or running task (a running one stops at once)',
      tags: ['tasks'],
      params: IdParamsSchema,
      response: CancelResponseSchema,
      gated: false,
      responses: { 404: { description: 'No such task' }, 409: { description: 'Already finished' } },
      handler: async ({ params, log }) => {
        const result = await cancelTaskBody(store(), params.id, 'the API', now());
        if (result.previous === 'running') rt.workers.value?.cancelLocal(params.id, 'the API');
        log.info({ task: params.id, previous: result.previous }, 'task cancelled');
        return { cancelled: true, task: result.task };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/tasks/:id/run',
      summary: 'Run a finished task again (a new run)',
      tags: ['tasks'],
      params: IdParamsSchema,
      status: 202,
      response: z.object({ task: TaskSchema }),
      gated: false,
      responses: { 404: { description: 'No such task' }, 409: { description: 'Pending or running already' } },
      handler: async ({ params }) => {
        const before = await store().getTask(params.id);
        if (before === undefined) throw new NotFoundError(`Task ${params.id} not found`);
        const task = FINAL_STATUSES.has(before.status) ? await store().requeueTask(params.id, now()) : before;
        if (task === undefined || task.status !== 'pending' || !FINAL_STATUSES.has(before.status)) {
          throw new ConflictError(
            `Task ${params.id} is ${task?.status ?? before.status}: only a finished task can be run again`,
          );
        }
        await store().addLog(task.id, null, 'info', 'queued again through the API', now());
        rt.workers.value?.wake();
        return { task };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/tasks/:id',
      summary: 'Delete a finished task with its runs and logs, for good',
      description:
        'A task holds clinical text (its description, result, logs): deleting it removes the task, ' +
        'every run and every log line of it. A pending or running task is refused (409): cancel it first.',
      tags: ['tasks'],
      params: IdParamsSchema,
      response: z.object({ deleted: z.literal(true), id: z.number().int() }),
      gated: false,
      responses: { 404: { description: 'No such task' }, 409: { description: 'Pending or running' } },
      handler: async ({ params, log }) => {
        const body = await deleteTaskBody(store(), params.id);
        log.info({ task: params.id }, 'task deleted');
        return body;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/logs',
      summary: "Task logs, newest first (one task's with task_id)",
      tags: ['tasks'],
      query: ListLogsQuerySchema,
      response: z.object({ logs: z.array(LogSchema) }),
      responses: { 404: { description: 'No task with that task_id' } },
      handler: ({ query }) =>
        logsBody(store(), { ...opt('taskId', query.task_id), ...opt('limit', query.limit) }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/runs',
      summary: "Latest runs, newest first (one task's with task_id)",
      tags: ['tasks'],
      query: ListLogsQuerySchema,
      response: z.object({ runs: z.array(RunSchema) }),
      responses: { 404: { description: 'No task with that task_id' } },
      handler: ({ query }) =>
        runsBody(store(), { ...opt('taskId', query.task_id), ...opt('limit', query.limit) }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/stats',
      summary: 'Tasks per status group and in total',
      tags: ['tasks'],
      response: z.object({ stats: StatsSchema }),
      handler: () => statsBody(store()),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/skills',
      summary: 'The skills runs may call, with their input schemas',
      tags: ['tasks'],
      response: z.object({ skills: z.array(SkillSchema) }),
      handler: () => skillsBody(store()),
    }),
  ]);
}

/** `{key: value}` when the value is set (exactOptionalPropertyTypes). */
function opt<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
