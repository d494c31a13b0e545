import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  ConfigError,
  TokenStore,
  checkBearer,
  defineRoute,
  parseTokensFile,
  serviceAuth,
} from '@clinicalsuite/kit';
import { startTestServer, type TestServer } from './helpers.js';

const routes = [
  defineRoute({ method: 'get', path: '/secret', summary: 'needs a token', handler: () => ({ ok: true }) }),
  defineRoute({
    method: 'post',
    path: '/echo',
    summary: 'echo',
    body: z.object({ n: z.number() }),
    handler: ({ body }) => ({ n: body.n }),
  }),
  defineRoute({ method: 'get', path: '/', summary: 'open', auth: false, handler: () => ({ open: true }) }),
];

describe('bearer auth over a real socket', () => {
  let dir: string;
  let tokensFile: string;
  let srv: TestServer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kit-auth-'));
    tokensFile = join(dir, 'tokens');
    writeFileSync(tokensFile, '# agent tokens\nagent-token ai_agent\nother-token llm\nall-token *\n');
    const tokens = new TokenStore({
      tokens: [{ token: 'env-token', scopes: ['ai_agent'] }],
      file: tokensFile,
      recheckMs: 0,
    });
    srv = await startTestServer({ routes, auth: { tokens, scopes: ['ai_agent'] } });
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (path: string, token?: string) =>
    fetch(`${srv.url}${path}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });

  it('answers 401 with WWW-Authenticate when the token is missing', async () => {
    const res = await get('/secret');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="test"');
    expect(await res.json()).toEqual({ detail: expect.stringContaining('Missing bearer token') });
  });

  it('answers 401 naming invalid_token when the token is wrong', async () => {
    const res = await get('/secret', 'env-tokem');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('accepts the env token and file tokens with the required scope', async () => {
    for (const token of ['env-token', 'agent-token', 'all-token']) {
      const res = await get('/secret', token);
      expect(res.status).toBe(200);
    }
  });

  it('answers 403 insufficient_scope to a valid token without the scope', async () => {
    const res = await get('/secret', 'other-token');
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('insufficient_scope');
  });

  it('checks the token before reading the body', async () => {
    const res = await fetch(`${srv.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'not json at all',
    });
    expect(res.status).toBe(401);
  });

  it('leaves open routes and the kit probes, metrics and docs open', async () => {
    for (const path of ['/', '/livez', '/readyz', '/metrics', '/openapi.json', '/docs']) {
      const res = await get(path);
      expect([200, 503]).toContain(res.status);
    }
  });

  it('re-reads the tokens file when it changes', async () => {
    expect((await get('/secret', 'rotated-token')).status).toBe(401);
    writeFileSync(tokensFile, 'rotated-token ai_agent\n');
    const later = new Date(Date.now() + 5000);
    utimesSync(tokensFile, later, later);
    expect((await get('/secret', 'rotated-token')).status).toBe(200);
    expect((await get('/secret', 'agent-token')).status).toBe(401);
    expect((await get('/secret', 'env-token')).status).toBe(200);
  });
});

describe('a tokens file caught mid-swap', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kit-auth-swap-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const touch = (path: string, seconds: number) => {
    const t = new Date(Date.now() + seconds * 1000);
    utimesSync(path, t, t);
  };

  it('keeps the last good tokens, answering 200/401 and never 500, while the file is unreadable, missing or empty', async () => {
    // The Kubernetes layout: tokens -> ..data/tokens, ..data -> a timestamped directory.
    const v1 = join(dir, '..2026_v1');
    mkdirSync(v1);
    writeFileSync(join(v1, 'tokens'), 'agent-token ai_agent\n');
    symlinkSync('..2026_v1', join(dir, '..data'));
    const file = join(dir, 'tokens');
    symlinkSync(join('..data', 'tokens'), file);
    const tokens = new TokenStore({ file, recheckMs: 0 });
    const srv = await startTestServer({ routes, auth: { tokens, scopes: ['ai_agent'] } });
    const warnings = () => srv.logs.filter((l) => l['level'] === 'warn').map((l) => String(l['msg']));
    const status = async (token: string) =>
      (await fetch(`${srv.url}/secret`, { headers: { authorization: `Bearer ${token}` } })).status;
    try {
      expect(await status('agent-token')).toBe(200);

      // Half-way through the flip the path names a directory: stat works, the read fails.
      rmSync(join(v1, 'tokens'));
      mkdirSync(join(v1, 'tokens'));
      touch(join(v1, 'tokens'), 10);
      expect(await status('agent-token')).toBe(200);
      expect(await status('agent-token')).toBe(200);
      expect(await status('wrong-token')).toBe(401);

      // Missing altogether (..data dangling).
      rmSync(join(v1, 'tokens'), { recursive: true });
      expect(await status('agent-token')).toBe(200);

      // Half-written: present but still empty. At first sight that is not "everyone is refused"
      // (nor open): the next version of the file is awaited.
      writeFileSync(join(v1, 'tokens'), '');
      touch(join(v1, 'tokens'), 20);
      expect(await status('agent-token')).toBe(200);
      // One warning for the whole failing stretch, naming no token.
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toMatch(/AUTH_TOKENS_FILE: cannot read .*last good tokens stay in force/);
      expect(JSON.stringify(srv.logs)).not.toContain('agent-token');

      // The new Secret lands: its tokens, and only its, from the next request.
      writeFileSync(join(v1, 'tokens'), 'rotated-token ai_agent\n');
      touch(join(v1, 'tokens'), 30);
      expect(await status('rotated-token')).toBe(200);
      expect(await status('agent-token')).toBe(401);

      // A later failure is reported again.
      writeFileSync(join(v1, 'tokens'), '# nothing yet\n');
      touch(join(v1, 'tokens'), 40);
      expect(await status('rotated-token')).toBe(200);
      expect(warnings()).toHaveLength(2);
      expect(warnings()[1]).toMatch(/holds no tokens/);
      // Still the same empty file at the next check: it revokes every token, it does not fail open.
      expect(await status('rotated-token')).toBe(401);
      expect(await status('rotated-token')).toBe(401);
    } finally {
      await srv.close();
    }
  });
});

describe('checkBearer and scopeFailureStatus', () => {
  const tokens = new TokenStore({
    tokens: [
      { token: 'agent-token', scopes: ['ai_agent'] },
      { token: 'llm-token', scopes: ['llm'] },
      { token: 'all-token', scopes: ['*'] },
    ],
  });

  it('tells an unknown token from a known one without the scope', () => {
    expect(checkBearer(tokens, ['ai_agent'], 'agent-token')).toBe('ok');
    expect(checkBearer(tokens, ['ai_agent'], 'all-token')).toBe('ok');
    expect(checkBearer(tokens, ['ai_agent'], 'llm-token')).toBe('insufficient_scope');
    expect(checkBearer(tokens, [], 'llm-token')).toBe('ok');
    expect(checkBearer(tokens, ['ai_agent'], 'nope')).toBe('invalid');
  });

  it('answers 401 instead of 403 for a token without the scope when the service says so', async () => {
    const srv = await startTestServer({
      routes,
      auth: { tokens, scopes: ['ai_agent'], scopeFailureStatus: 401 },
    });
    try {
      const res = await fetch(`${srv.url}/secret`, { headers: { authorization: 'Bearer llm-token' } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('scope="ai_agent"');
      expect(
        (await fetch(`${srv.url}/secret`, { headers: { authorization: 'Bearer agent-token' } })).status,
      ).toBe(200);
    } finally {
      await srv.close();
    }
  });
});

describe('parseTokensFile', () => {
  it('reads tokens with scopes, default scopes, comments and blank lines', () => {
    expect(parseTokensFile('# c\n\n a b,c \nd\r\n', ['x'])).toEqual([
      { token: 'a', scopes: ['b', 'c'] },
      { token: 'd', scopes: ['x'] },
    ]);
  });
});

describe('serviceAuth', () => {
  const face = { scope: 'face', tokenEnv: 'FACE_API_TOKEN', token: 'face-token-0123456789' };

  it('is on by default: the own token with the service scope, and the file tokens holding it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kit-auth-config-'));
    try {
      const file = join(dir, 'tokens');
      // One file shared by several services: each line names the services it opens.
      writeFileSync(file, 'face-file-token face\ntok-tts tts\nall-token *\nbare-token\n');
      const auth = serviceAuth({ AUTH_TOKENS_FILE: file }, face);
      expect(auth?.scopes).toEqual(['face']);
      const check = (token: string) => checkBearer(auth!.tokens, auth!.scopes ?? [], token);
      expect(check('face-token-0123456789')).toBe('ok');
      expect(check('face-file-token')).toBe('ok');
      expect(check('all-token')).toBe('ok');
      // A line without scopes is a token of the service reading the file.
      expect(check('bare-token')).toBe('ok');
      // The attack: a token of another service opens nothing here.
      expect(check('tok-tts')).toBe('insufficient_scope');
      expect(check('unknown')).toBe('invalid');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to start with no token at all, naming the variables and the way out', () => {
    expect(() => serviceAuth({}, { ...face, token: undefined })).toThrow(ConfigError);
    expect(() => serviceAuth({}, { ...face, token: undefined })).toThrow(
      /FACE_API_TOKEN: is required \(or AUTH_TOKENS_FILE with `face` tokens\).*AUTH_DISABLED=true/,
    );
  });

  it('is off only when AUTH_DISABLED says so, and never where the spec fixes auth', () => {
    expect(serviceAuth({ AUTH_DISABLED: true }, face)).toBeUndefined();
    expect(serviceAuth({ AUTH_DISABLED: false }, face)).toBeDefined();
    expect(() =>
      serviceAuth(
        { AUTH_DISABLED: true },
        { scope: 'llm', tokenEnv: 'API_TOKEN', token: 't', alwaysOn: true },
      ),
    ).toThrow(/AUTH_DISABLED: .*fixed by the spec/);
  });
});
