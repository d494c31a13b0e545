import { describe, expect, it } from '@jest/globals';
import { readConfig } from '../../../operator/src/local/config.js';
import { backoffDelay } from '../../../operator/src/local/supervisor.js';

describe('restart backoff', () => {
  it('doubles from 1 s up to 30 s by default', () => {
    const { backoff } = readConfig({}, '/repo');
    expect(backoff).toEqual({ initialMs: 1000, maxMs: 30_000, resetAfterMs: 60_000 });
    expect([0, 1, 2, 3, 4, 5, 6, 50].map((n) => backoffDelay(n, backoff))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('scales with CLINICALSUITE_RESTART_BACKOFF_MS', () => {
    const { backoff } = readConfig({ CLINICALSUITE_RESTART_BACKOFF_MS: '100' }, '/repo');
    expect([0, 1, 2, 10].map((n) => backoffDelay(n, backoff))).toEqual([100, 200, 400, 3000]);
  });
});

describe('readConfig', () => {
  it('defaults home and services dir, and passes on only PATH, HOME and LOG_LEVEL', () => {
    const config = readConfig({ HOME: '/home/me', PATH: '/bin', SECRET: 'x' }, '/repo');
    expect(config.servicesDir).toBe('/repo/services');
    expect(config.home).toMatch(/\.cache\/clinicalsuite$/);
    expect(config.inherit).toEqual({ HOME: '/home/me', PATH: '/bin' });
    expect(config.stopTimeoutMs).toBe(10_000);
    expect(config.dependencyWaitMs).toBe(60_000);
  });

  it('rejects a bad value naming the variable', () => {
    expect(() => readConfig({ CLINICALSUITE_BASE_PORT: 'eighty' }, '/repo')).toThrow(
      'CLINICALSUITE_BASE_PORT',
    );
  });
});
