import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '@clinicalsuite/kit';
import { loadTaskAgentConfig } from '../../services/task-agent/src/config.js';
import { TEST_ENV } from './helpers.js';

describe('task agent configuration', () => {
  it('refuses an LLM deadline a timer can not keep (above 2147483647 ms Node fires it after 1 ms)', () => {
    const base = { ...TEST_ENV, LLM_URL: 'http://127.0.0.1:1' };
    expect(
      loadTaskAgentConfig({ ...base, TASK_AGENT_LLM_TIMEOUT_MS: '2147483647' }).TASK_AGENT_LLM_TIMEOUT_MS,
    ).toBe(2_147_483_647);
    expect(() => loadTaskAgentConfig({ ...base, TASK_AGENT_LLM_TIMEOUT_MS: '3000000000' })).toThrow(
      ConfigError,
    );
    expect(() => loadTaskAgentConfig({ ...base, TASK_AGENT_LLM_TIMEOUT_MS: '3000000000' })).toThrow(
      /TASK_AGENT_LLM_TIMEOUT_MS: must be <= 2147483647 ms/,
    );
  });
});
