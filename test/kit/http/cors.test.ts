import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  ConfigError,
  Readiness,
  TokenStore,
  defineRoute,
  kitConfigSchema,
  loadConfig,
} from '@clinicalsuite/kit';
import { startTestServer, type TestServer } from '../helpers.js';

// Browser clients: no CORS header unless CORS_ORIGINS lists the page's origin; a listed origin's
// preflight is answered (the Authorization header allowed), the bearer token still required.

const routes = [
  defineRoute({
    method: 'post',
    path: '/echo',
    summary: 'echo',
    body: z.object({ n: z.number() }),
    handler: ({ body }) => ({ n: body.n }),
  }),
];
const auth = {
  tokens: new TokenStore({ tokens: [{ token: 'tok-0123456789abcdef', scopes: ['x'] }] }),
  scopes: ['x'],
};
const APP = 'https://app.hospital.example';

describe('CORS', () => {
  let closed: TestServer;
  let open: TestServer;

  beforeAll(async () => {
    const ready = () => {
      const readiness = new Readiness();
      readiness.setReady();
      return readiness;
    };
    closed = await startTestServer({ routes, auth, readiness: ready() });
    open = await startTestServer(
      { routes, auth, readiness: ready() },
      { CORS_ORIGINS: `${APP}, http://localhost:3000` },
    );
  });
  afterAll(async () => Promise.all([closed.close(), open.close()]));

  const preflight = (url: string, origin: string) =>
    fetch(`${url}/echo`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization',
      },
    });

  it('sends no CORS header by default, to any origin', async () => {
    const pre = await preflight(closed.url, APP);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    const res = await fetch(`${closed.url}/echo`, {
      method: 'POST',
      headers: {
        origin: APP,
        authorization: 'Bearer tok-0123456789abcdef',
        'content-type': 'application/json',
      },
      body: '{"n":1}',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('lets a listed origin in, naming it, and still wants the token', async () => {
    const pre = await preflight(open.url, APP);
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(APP);
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    const anonymous = await fetch(`${open.url}/echo`, {
      method: 'POST',
      headers: { origin: APP, 'content-type': 'application/json' },
      body: '{"n":1}',
    });
    expect(anonymous.status).toBe(401);
    const res = await fetch(`${open.url}/echo`, {
      method: 'POST',
      headers: {
        origin: APP,
        authorization: 'Bearer tok-0123456789abcdef',
        'content-type': 'application/json',
      },
      body: '{"n":2}',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('vary')).toMatch(/Origin/i);
  });

  it('gives another origin nothing', async () => {
    const pre = await preflight(open.url, 'https://evil.example');
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    expect(pre.headers.get('access-control-allow-methods')).toBeNull();
  });

  it('refuses a value that is not a list of origins', () => {
    const schema = kitConfigSchema({ port: 0, maxConcurrency: 1 });
    expect(() => loadConfig(schema, { CORS_ORIGINS: '*' })).toThrow(ConfigError);
    expect(() => loadConfig(schema, { CORS_ORIGINS: 'https://app.example/path' })).toThrow(/no path/);
  });
});
