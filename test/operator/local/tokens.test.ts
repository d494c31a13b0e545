import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  describeTokens,
  generateToken,
  parseTokensFile,
  resolveTokens,
  whereIs,
} from '../../../operator/src/local/tokens.js';

const names = ['API_TOKEN', 'AI_AGENT_API_TOKEN'];
let home: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'cs-tokens-'));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe('resolveTokens', () => {
  it('generates 32-byte base64url tokens into a 0600 file and reuses them next time', async () => {
    const first = await resolveTokens({ names, env: {}, home });
    expect(first.generated).toEqual(names);
    expect(first.file).toBe(join(home, 'tokens.env'));
    for (const name of names) expect(first.tokens[name]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.tokens['API_TOKEN']).not.toBe(first.tokens['AI_AGENT_API_TOKEN']);
    expect(statSync(first.file!).mode & 0o777).toBe(0o600);
    expect(parseTokensFile(readFileSync(first.file!, 'utf8'))).toEqual(new Map(Object.entries(first.tokens)));

    const second = await resolveTokens({ names, env: {}, home });
    expect(second.tokens).toEqual(first.tokens);
    expect(second.generated).toEqual([]);
    expect(second.fromFile).toEqual(names);
  });

  it('prefers the environment and keeps only the others in the file', async () => {
    const resolved = await resolveTokens({
      names,
      env: { API_TOKEN: 'from-env', AI_AGENT_API_TOKEN: '' },
      home,
    });
    expect(resolved.tokens['API_TOKEN']).toBe('from-env');
    expect(resolved.fromEnv).toEqual(['API_TOKEN']);
    expect(readFileSync(resolved.file!, 'utf8')).not.toContain('from-env');
    expect(describeTokens(resolved)).toBe(
      `tokens: API_TOKEN from the environment; AI_AGENT_API_TOKEN in ${resolved.file}`,
    );
  });

  it('writes no file when every token comes from the environment', async () => {
    const resolved = await resolveTokens({ names, env: { API_TOKEN: 'a', AI_AGENT_API_TOKEN: 'b' }, home });
    expect(resolved.file).toBeNull();
    expect(() => statSync(join(home, 'tokens.env'))).toThrow();
  });

  it('tightens a tokens file that others can read, keeping its values and comments out', async () => {
    const file = join(home, 'tokens.env');
    writeFileSync(file, '# mine\nAPI_TOKEN=keep-me\nOTHER=x\n');
    chmodSync(file, 0o644);
    const resolved = await resolveTokens({ names, env: {}, home });
    expect(resolved.tokens['API_TOKEN']).toBe('keep-me');
    expect(resolved.generated).toEqual(['AI_AGENT_API_TOKEN']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parseTokensFile(readFileSync(file, 'utf8')).get('OTHER')).toBe('x');
  });

  it('never puts a token value in the description', async () => {
    const resolved = await resolveTokens({ names, env: {}, home });
    const text = describeTokens(resolved);
    for (const value of Object.values(resolved.tokens)) expect(text).not.toContain(value);
  });
});

describe('resolveTokens with defaults (the task proxy’s first user)', () => {
  const signIn = ['TASK_PROXY_USER', 'TASK_PROXY_PASSWORD'];
  const generate = (name: string) => (name === 'TASK_PROXY_USER' ? 'admin' : generateToken());

  it('stores the default user and a random password, and reuses them', async () => {
    const first = await resolveTokens({ names: signIn, env: {}, home, generate });
    expect(first.tokens['TASK_PROXY_USER']).toBe('admin');
    expect(first.tokens['TASK_PROXY_PASSWORD']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(parseTokensFile(readFileSync(first.file!, 'utf8')).get('TASK_PROXY_USER')).toBe('admin');
    const second = await resolveTokens({ names: signIn, env: {}, home, generate });
    expect(second.tokens).toEqual(first.tokens);
    expect(second.fromFile).toEqual(signIn);
  });

  it('takes them from the environment first, and says where each one is without its value', async () => {
    const resolved = await resolveTokens({
      names: signIn,
      env: { TASK_PROXY_USER: 'clinician' },
      home,
      generate,
    });
    expect(resolved.tokens['TASK_PROXY_USER']).toBe('clinician');
    expect(whereIs(resolved, 'TASK_PROXY_USER')).toBe('from the environment');
    expect(whereIs(resolved, 'TASK_PROXY_PASSWORD')).toBe(`in ${join(home, 'tokens.env')}`);
    expect(describeTokens(resolved)).not.toContain(resolved.tokens['TASK_PROXY_PASSWORD']);
  });
});
