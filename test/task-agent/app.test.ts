/**
 * The task agent's lifecycle: a shutdown that begins while `start()` is still opening (here, while
 * the skills are being saved) stops the opening where it is. Nothing starts after close() began:
 * no workers claiming tasks, no readiness flipped back to ready, no "the workers opened".
 */
import { describe, expect, it } from '@jest/globals';
import { createLogger, serve } from '@clinicalsuite/kit';
import { buildTaskAgentApp } from '../../services/task-agent/src/app.js';
import { loadTaskAgentConfig } from '../../services/task-agent/src/config.js';
import { openTaskStore } from '../../services/task-agent/src/store/open.js';
import type { TaskStore } from '../../services/task-agent/src/store/types.js';
import { captureLogs, deferred, sleep, waitFor } from '../kit/helpers.js';
import { closedPort } from '../patient-sim/helpers.js';
import { TEST_ENV, tempSqlitePath } from './helpers.js';

/** A task agent (its LLM unreachable) whose store is opened by `openStore`, with its logs captured. */
async function agentOpening(openStore: () => Promise<TaskStore>, sqlitePath = tempSqlitePath()) {
  const config = loadTaskAgentConfig({
    ...TEST_ENV,
    LLM_URL: `http://127.0.0.1:${String(await closedPort())}`,
    TASK_AGENT_DB: sqlitePath,
  });
  const { logs, destination } = captureLogs();
  const service = buildTaskAgentApp({
    config,
    logger: createLogger({ service: 'task-agent', level: 'debug', destination }),
    processMetrics: false,
    openStore,
  });
  return { service, logs };
}

describe('a shutdown during start()', () => {
  it('stops the opening at its next step: no workers, no readiness, and close() waits for it', async () => {
    const sqlitePath = tempSqlitePath();
    // A task waiting in the store: workers started by mistake would claim it.
    const seed = await openTaskStore({ sqlitePath });
    await seed.createTask({ title: 'waiting', description: '', priority: 5 }, new Date());
    await seed.close();

    const saving = deferred();
    const saveStarted = deferred();
    let claims = 0;
    let storeClosed = false;
    const openStore = async (): Promise<TaskStore> => {
      const store = await openTaskStore({ sqlitePath });
      return new Proxy(store, {
        get(target, key) {
          const value: unknown = Reflect.get(target, key);
          if (typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            if (key === 'saveSkills') {
              saveStarted.resolve();
              await saving.promise;
            }
            if (key === 'claimTask') claims += 1;
            if (key === 'close') storeClosed = true;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    };
    const { service, logs } = await agentOpening(openStore, sqlitePath);
    const server = await serve(service.kit, { signals: [], exit: false, onShutdown: () => service.close() });
    const started = service.start();
    await saveStarted.promise;

    // SIGTERM while the skills are being saved.
    let stopped = false;
    const stopping = server.shutdown('SIGTERM').then(() => {
      stopped = true;
    });
    await sleep(100);
    expect(stopped).toBe(false); // close() waits for start() to settle
    saving.resolve();
    await stopping;
    await started;

    expect(service.kit.readiness.ready).toBe(false);
    expect(service.kit.readiness.reason).toBe('shutting down');
    expect(storeClosed).toBe(true);
    await sleep(300); // more than a poll and a tick
    expect(claims).toBe(0);
    expect(logs.some((l) => l['msg'] === 'the workers opened')).toBe(false);
    const check = await openTaskStore({ sqlitePath });
    try {
      expect((await check.getTask(1))?.status).toBe('pending');
    } finally {
      await check.close();
    }
  });

  it('ends a wait between attempts to open the store at once', async () => {
    let attempts = 0;
    const { service } = await agentOpening(() => {
      attempts += 1;
      return Promise.reject(new Error('disk full'));
    });
    const started = service.start();
    await waitFor(() => attempts >= 3); // the waits grow: 500 ms, 1 s, 2 s …
    const t0 = Date.now();
    await service.close();
    await started;
    expect(Date.now() - t0).toBeLessThan(500);
    const before = attempts;
    await sleep(300);
    expect(attempts).toBe(before);
    expect(service.kit.readiness.ready).toBe(false);
  });

  it('does not wait on a store that never opens', async () => {
    const { service } = await agentOpening(() => new Promise<TaskStore>(() => undefined));
    const started = service.start();
    await sleep(50);
    await service.close();
    await started;
    expect(service.kit.readiness.reason).toBe('shutting down');
  });
});
