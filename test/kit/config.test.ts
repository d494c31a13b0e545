import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { childLimits, ConfigError, env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';

const schema = kitConfigSchema({ port: 8001, maxConcurrency: 3, bodyLimit: '10mb' }).extend({
  API_TOKEN: z.string().min(8, 'must be at least 8 characters'),
  UPSTREAM_URL: env.url().optional(),
});

describe('loadConfig', () => {
  it('applies defaults, parses typed values and treats empty strings as unset', () => {
    const config = loadConfig(schema, {
      API_TOKEN: 'abcdefgh',
      PORT: '',
      MAX_CONCURRENCY: ' 5 ',
      EXIT_WITH_PARENT: 'yes',
    });
    expect(config).toMatchObject({
      PORT: 8001,
      HOST: '0.0.0.0',
      MAX_CONCURRENCY: 5,
      QUEUE_SIZE: 64,
      BODY_LIMIT: 10 * 1024 * 1024,
      EXIT_WITH_PARENT: true,
      LOG_LEVEL: 'info',
    });
    expect(loadConfig(schema, { API_TOKEN: 'abcdefgh', BODY_LIMIT: '512kb' }).BODY_LIMIT).toBe(524288);
  });

  it('names every missing or bad variable with what was given', () => {
    let error: unknown;
    try {
      loadConfig(schema, {
        MAX_CONCURRENCY: '0',
        PORT: 'http',
        LOG_LEVEL: 'loud',
        UPSTREAM_URL: 'ftp://x',
        BODY_LIMIT: 'big',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        'API_TOKEN: is required but not set',
        'MAX_CONCURRENCY: must be >= 1 (got "0")',
        'PORT: must be an integer (got "http")',
        expect.stringMatching(/^LOG_LEVEL: .* \(got "loud"\)$/),
        'UPSTREAM_URL: must be an http(s) URL (got "ftp://x")',
        'BODY_LIMIT: must be a size such as 10mb, 512kb or 1048576 (got "big")',
      ]),
    );
    expect(problems).toHaveLength(6);
  });

  it("engine process limits: 1gb and 120 s unless the service's defaults or CHILD_* say otherwise", () => {
    const config = loadConfig(schema, { API_TOKEN: 'abcdefgh' });
    expect(childLimits(config)).toEqual({ memoryBytes: 1024 ** 3, cpuSeconds: 120 });
    const own = kitConfigSchema({
      port: 1,
      maxConcurrency: 1,
      childMemoryLimit: '512mb',
      childCpuSeconds: 300,
    });
    expect(childLimits(loadConfig(own, {}))).toEqual({ memoryBytes: 512 * 1024 ** 2, cpuSeconds: 300 });
    const set = loadConfig(own, { CHILD_MEMORY_LIMIT: '2gb', CHILD_CPU_SECONDS: '30' });
    expect(childLimits(set)).toEqual({ memoryBytes: 2 * 1024 ** 3, cpuSeconds: 30 });
    expect(() => loadConfig(own, { CHILD_MEMORY_LIMIT: '1mb', CHILD_CPU_SECONDS: '0' })).toThrow(
      /CHILD_MEMORY_LIMIT: must be at least 16mb[\s\S]*CHILD_CPU_SECONDS: must be >= 1/,
    );
  });

  it('refuses a timer setting above 2147483647 ms, which Node would fire after 1 ms', () => {
    const base = { API_TOKEN: 'abcdefgh' };
    const max = loadConfig(schema, {
      ...base,
      QUEUE_TIMEOUT_MS: '2147483647',
      REQUEST_TIMEOUT_MS: '2147483647',
      SHUTDOWN_GRACE_MS: '2147483647',
    });
    expect([max.QUEUE_TIMEOUT_MS, max.REQUEST_TIMEOUT_MS, max.SHUTDOWN_GRACE_MS]).toEqual([
      2_147_483_647, 2_147_483_647, 2_147_483_647,
    ]);
    let error: unknown;
    try {
      loadConfig(schema, {
        ...base,
        QUEUE_TIMEOUT_MS: '2147483648',
        REQUEST_TIMEOUT_MS: '3000000000',
        SHUTDOWN_GRACE_MS: '99999999999',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const why = 'must be <= 2147483647 ms (the longest delay a Node.js timer keeps)';
    expect((error as ConfigError).problems).toEqual([
      `QUEUE_TIMEOUT_MS: ${why} (got "2147483648")`,
      `REQUEST_TIMEOUT_MS: ${why} (got "3000000000")`,
      `SHUTDOWN_GRACE_MS: ${why} (got "99999999999")`,
    ]);
    // The builder services use for their own delays: the lower of `max` and the timer limit.
    expect(env.ms({ min: 10 }).safeParse('5').success).toBe(false);
    expect(env.ms({ max: 5000 }).safeParse('5001').error?.issues[0]?.message).toBe('must be <= 5000');
    expect(env.ms({ max: 1e12 }).safeParse('2147483648').success).toBe(false);
    expect(env.ms().parse('0')).toBe(0);
  });

  it('stops a real service at start-up with exit code 78 and a message naming the variable', () => {
    const fixture = fileURLToPath(new URL('../fixtures/services/kit-service.mjs', import.meta.url));
    const result = spawnSync(process.execPath, [fixture], {
      env: { PATH: process.env['PATH'], MAX_CONCURRENCY: 'many', PORT: '0' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toBe(
      'Invalid configuration:\n  - MAX_CONCURRENCY: must be an integer (got "many")\n',
    );
  });
});
