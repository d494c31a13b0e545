import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ConfigError, env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';

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
