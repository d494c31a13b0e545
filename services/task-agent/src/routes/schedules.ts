import { NotFoundError, ValidationError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { z } from 'zod';
import { cronProblem, nextRun } from '../adapters/cron.js';
import {
  IdParamsSchema,
  ScheduleSchema,
  UpdateScheduleSchema,
  createScheduleSchema,
} from '../schemas/api.js';
import { schedulesBody } from '../store/queries.js';
import type { TaskStore } from '../store/types.js';
import { whenReady, type TaskAgentRuntime } from './runtime.js';

/** Recurring tasks: a cron expression in a time zone creates a task at each firing. */
export function scheduleRoutes(rt: TaskAgentRuntime): AnyRoute[] {
  const store = (): TaskStore => rt.store.require();
  const now = (): Date => new Date(rt.now());
  return whenReady([
    defineRoute({
      method: 'get',
      path: '/api/v1/schedules',
      summary: 'Recurring schedules with their next firing',
      tags: ['schedules'],
      response: z.object({ schedules: z.array(ScheduleSchema) }),
      handler: () => schedulesBody(store()),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/schedules',
      summary: 'Create a schedule: a task (title, description, priority) at every firing of `cron`',
      description:
        '`cron` has five fields (minute hour day month weekday) or six with seconds first, read in ' +
        '`timezone` (IANA, default UTC). A firing missed while no agent ran fires once when one is back.',
      tags: ['schedules'],
      body: createScheduleSchema({
        titleChars: rt.config.TASK_AGENT_MAX_TITLE_CHARS,
        descriptionChars: rt.config.TASK_AGENT_MAX_DESCRIPTION_CHARS,
      }),
      status: 201,
      response: z.object({ schedule: ScheduleSchema }),
      gated: false,
      responses: { 422: { description: 'Bad expression or time zone (named)' } },
      handler: async ({ body }) => {
        const problem = cronProblem(body.cron, body.timezone);
        if (problem !== undefined) {
          const field = problem.includes('time zone') ? 'timezone' : 'cron';
          throw new ValidationError([{ loc: ['body', field], msg: problem, type: 'value_error' }]);
        }
        const schedule = await store().createSchedule(body, nextRun, now());
        return { schedule };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/api/v1/schedules/:id',
      summary: 'Enable or disable a schedule',
      tags: ['schedules'],
      params: IdParamsSchema,
      body: UpdateScheduleSchema,
      response: z.object({ schedule: ScheduleSchema }),
      responses: { 404: { description: 'No such schedule' } },
      gated: false,
      handler: async ({ params, body }) => {
        const schedule = await store().setScheduleEnabled(params.id, body.enabled, nextRun, now());
        if (schedule === undefined) throw new NotFoundError(`Schedule ${params.id} does not exist`);
        return { schedule };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/schedules/:id',
      summary: 'Delete a schedule (the tasks it created stay)',
      tags: ['schedules'],
      params: IdParamsSchema,
      response: z.object({ deleted: z.boolean() }),
      responses: { 404: { description: 'No such schedule' } },
      gated: false,
      handler: async ({ params }) => {
        if (!(await store().deleteSchedule(params.id)))
          throw new NotFoundError(`Schedule ${params.id} does not exist`);
        return { deleted: true };
      },
    }),
  ]);
}
