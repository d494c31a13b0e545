import type { ResourceSpec } from '@clinicalsuite/kit';
import type { TaskAgentConfig } from '../config.js';
import { skillEntry, type AnySkill } from '../domain/skills.js';
import { openTaskStore } from '../store/open.js';
import type { TaskStore } from '../store/types.js';

/**
 * The agent's store as a kit resource: PostgreSQL by DATABASE_URL, else SQLite (or `open`), tried
 * again with backoff while it cannot be opened (/health says why), with the skill catalogue
 * published in it (the task proxy answers from it while this agent is offline).
 */
export function storeResource(
  config: TaskAgentConfig,
  skills: readonly AnySkill[],
  open: () => Promise<TaskStore> = () =>
    openTaskStore({
      sqlitePath: config.sqlitePath,
      ...(config.DATABASE_URL === undefined ? {} : { databaseUrl: config.DATABASE_URL }),
    }),
): ResourceSpec<TaskStore> {
  return {
    name: 'the store',
    startingReason: 'starting: the store is not open yet',
    open: async ({ untilClosed }) => {
      const store = await untilClosed(open(), (late) => late.close());
      await store.saveSkills(skills.map(skillEntry)).catch(async (error: unknown) => {
        await store.close();
        throw error;
      });
      return store;
    },
    close: (store) => store.close(),
    retry: { firstPauseMs: 500, maxPauseMs: 10_000 },
    failureReason: (error) => `the store cannot be opened: ${error.message}`,
  };
}
