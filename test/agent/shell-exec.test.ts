import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_SHELL_ALLOWLIST } from '../../services/agent/src/config.js';
import { decide, shellPolicy } from '../../services/agent/src/domain/shell/index.js';
import { startLlm, type LlmTestServer } from '../llm/helpers.js';
import { agentGet, agentPost, startAgent, type AgentTestServer } from './helpers.js';

// /shell over HTTP, through the real runner: the agent in front of the real text LLM (tiny generated
// model) with the shell enabled in a scratch root holding a canary file, and another canary beside
// the root. Every attempt of the corpus must answer 403, run nothing (no `executed` or `failed`
// attempt counted, canaries unchanged, no file created); allowed commands run and answer.

interface Corpus {
  allowlist_extra: string[];
  attempts: { command: string; why: string }[];
  natural: string[];
}
interface ShellBody {
  command: string;
  argv: string[];
  translated: boolean;
  workdir: string;
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  timed_out: boolean;
  timeout_s: number;
  duration_ms: number;
  detail?: string;
}

const corpus = JSON.parse(readFileSync(new URL('./shell-corpus.json', import.meta.url), 'utf8')) as Corpus;
const ALLOWLIST = [...DEFAULT_SHELL_ALLOWLIST, ...corpus.allowlist_extra];
const MAX_CHARS = 2000;
const MAX_OUTPUT = 1024;
const CANARY = 'canary: must survive every attempt\n';
const OUTSIDE = 'outside canary: must survive too\n';
const SECRET_TOKEN = 'process-env-secret-token-9f8e7d';

let dir: string;
let root: string;
let llm: LlmTestServer;
let agent: AgentTestServer; // enabled, no translation
let translating: AgentTestServer; // enabled, natural language translated by the LLM
let disabled: AgentTestServer; // the default: SHELL_EXEC_ENABLED unset
let limited: AgentTestServer; // enabled, each command under 128 MiB of memory

const shellEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  LLM_URL: llm.url,
  SHELL_EXEC_ENABLED: 'true',
  SHELL_TRANSLATE: 'false',
  SHELL_WORKDIR: root,
  SHELL_ALLOWLIST: ALLOWLIST.join(','),
  SHELL_MAX_COMMAND_CHARS: String(MAX_CHARS),
  SHELL_MAX_OUTPUT_BYTES: String(MAX_OUTPUT),
  SHELL_MAX_TIMEOUT_S: '2',
  ...extra,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-shell-'));
  chmodSync(dir, 0o755); // mkdtemp makes it 0700: the unprivileged user must reach the root
  root = join(dir, 'root');
  mkdirSync(join(root, 'reports'), { recursive: true });
  writeFileSync(join(root, 'canary.txt'), CANARY);
  writeFileSync(join(root, 'reports', 'today.txt'), 'bệnh nhân ổn định\n');
  writeFileSync(join(root, 'big.txt'), 'x'.repeat(5000));
  writeFileSync(join(dir, 'outside.txt'), OUTSIDE);
  mkdirSync(join(dir, 'elsewhere'));
  symlinkSync(join(dir, 'elsewhere'), join(root, 'escape'));
  llm = await startLlm({ MAX_CONCURRENCY: '2' });
  [agent, translating, disabled, limited] = await Promise.all([
    startAgent(shellEnv()),
    startAgent(shellEnv({ SHELL_TRANSLATE: 'true' })),
    startAgent({ LLM_URL: llm.url, SHELL_WORKDIR: root }),
    startAgent(shellEnv({ CHILD_MEMORY_LIMIT: '128mb' })),
  ]);
}, 60_000);

afterAll(async () => {
  // Any of them may be missing when beforeAll failed.
  const started = [agent, translating, disabled, limited] as (AgentTestServer | undefined)[];
  await Promise.all(started.map((a) => a?.close() ?? Promise.resolve()));
  await (llm as LlmTestServer | undefined)?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function shell(
  target: AgentTestServer,
  body: Record<string, unknown>,
): Promise<{ status: number; body: ShellBody }> {
  const res = await agentPost(`${target.url}/shell`, body);
  return { status: res.status, body: (await res.json()) as ShellBody };
}

const rootListing = (): string[] => readdirSync(root).sort();
const INITIAL = ['big.txt', 'canary.txt', 'escape', 'reports'];

function canariesSurvive(): void {
  expect(readFileSync(join(root, 'canary.txt'), 'utf8')).toBe(CANARY);
  expect(readFileSync(join(dir, 'outside.txt'), 'utf8')).toBe(OUTSIDE);
  expect(rootListing()).toEqual(INITIAL);
}

/** `agent_shell_attempts_total` by outcome, from /metrics. */
async function attempts(target: AgentTestServer): Promise<Record<string, number>> {
  const text = await (await agentGet(`${target.url}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^\w*shell_attempts_total\{[^}]*outcome="(\w+)"[^}]*\} (\d+)/gm)) {
    counts[m[1]!] = Number(m[2]);
  }
  return counts;
}

const generated = [
  { command: `echo ${'a'.repeat(MAX_CHARS)}`, why: 'longer than SHELL_MAX_COMMAND_CHARS' },
  { command: 'ls '.repeat(100_000), why: '300k characters' },
  { command: `ls ${'a '.repeat(200)}`, why: 'more than 128 arguments' },
];

describe('/shell disabled (the default)', () => {
  it('answers 403 before reading the body, and counts it', async () => {
    const before = (await attempts(disabled))['refused_disabled'] ?? 0;
    for (const body of [{ command: 'ls' }, {}, { command: 42 }]) {
      const r = await shell(disabled, body);
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ detail: 'Shell execution is disabled (SHELL_EXEC_ENABLED)' });
    }
    const res = await agentPost(`${disabled.url}/shell`, '{not json');
    expect(res.status).toBe(403);
    expect((await attempts(disabled))['refused_disabled']).toBe(before + 4);
  });

  it('still needs the token first', async () => {
    const res = await agentPost(`${disabled.url}/shell`, { command: 'ls' }, { token: null });
    expect(res.status).toBe(401);
  });
});

describe('the corpus over HTTP: every attempt 403, nothing runs', () => {
  it('refuses each one and leaves the canaries and the root untouched', async () => {
    // A blank command is not an attempt to refuse but an invalid body (422, below); the policy
    // still refuses it (shell-policy.test.ts).
    const all = [...corpus.attempts, ...generated].filter((a) => a.command.trim() !== '');
    expect(all.length).toBeGreaterThanOrEqual(120);
    const before = await attempts(agent);
    const wrong: string[] = [];
    for (const { command, why } of all) {
      const r = await shell(agent, { command });
      if (r.status !== 403 || !String(r.body.detail).startsWith('Command blocked: ')) {
        wrong.push(`${why}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      }
      canariesSurvive();
    }
    expect(wrong).toEqual([]);
    const after = await attempts(agent);
    expect((after['refused_policy'] ?? 0) - (before['refused_policy'] ?? 0)).toBe(all.length);
    // Nothing ran: no attempt counted as executed, failed or timed out.
    for (const outcome of ['executed', 'failed', 'timeout']) {
      expect(after[outcome] ?? 0).toBe(before[outcome] ?? 0);
    }
  }, 60_000);

  it('answers an empty or blank command as invalid input (422 naming the field), not as blocked', async () => {
    const before = await attempts(agent);
    for (const command of ['', '   ', '\t \n']) {
      const r = await shell(agent, { command });
      expect({ command, status: r.status }).toEqual({ command, status: 422 });
      expect(r.body.detail).toEqual([
        { loc: ['body', 'command'], msg: 'must not be empty or blank', type: expect.any(String) },
      ]);
    }
    expect(await attempts(agent)).toEqual(before);
  });

  it('also through /run with the shell intent', async () => {
    const res = await agentPost(`${agent.url}/run`, { message: 'ls; rm canary.txt', force_intent: 'shell' });
    expect(res.status).toBe(403);
    canariesSurvive();
  });

  it('refuses a workdir outside the root, also through a symbolic link', async () => {
    for (const workdir of ['..', '../', '/etc', dir, 'reports/../..', 'escape', 'escape/']) {
      const r = await shell(agent, { command: 'ls', workdir });
      expect([r.status, r.body.detail?.slice(0, 16)]).toEqual([403, 'Command blocked:']);
    }
    expect((await shell(agent, { command: 'ls', workdir: 'missing' })).status).toBe(404);
    expect((await shell(agent, { command: 'ls', workdir: 'canary.txt' })).status).toBe(404);
    canariesSurvive();
  });

  it('logs each attempt at info with its outcome and reason, never the command or its output', async () => {
    await shell(agent, { command: 'cat zebra-secret-42; rm x' });
    await shell(agent, { command: 'echo zebra-secret-43' });
    const info = agent.logs.filter((l) => l['level'] === 'info');
    const lines = info
      .filter((l) => l['msg'] === 'shell attempt')
      .map((l) => l['shell'] as Record<string, unknown>);
    expect(lines.at(-2)).toMatchObject({
      outcome: 'refused_policy',
      reason: 'metacharacter',
      program: 'cat',
    });
    expect(lines.at(-1)).toMatchObject({ outcome: 'executed', program: 'echo', exit_code: 0 });
    expect(JSON.stringify(info)).not.toMatch(/zebra-secret/);
    // At debug, for whoever debugs: the argv.
    expect(JSON.stringify(agent.logs.filter((l) => l['level'] === 'debug'))).toMatch(/zebra-secret-43/);
  });
});

describe('allowed commands run', () => {
  it('ls, echo and cat answer with their output', async () => {
    const ls = await shell(agent, { command: 'ls' });
    expect(ls.status).toBe(200);
    expect(ls.body).toMatchObject({
      command: 'ls',
      argv: ['ls'],
      translated: false,
      workdir: '.',
      exit_code: 0,
      signal: null,
      stdout: `${INITIAL.join('\n')}\n`,
      stderr: '',
      stdout_truncated: false,
      stderr_truncated: false,
      timed_out: false,
      timeout_s: 2,
    });
    const echo = await shell(agent, { command: 'echo hi' });
    expect([echo.status, echo.body.stdout]).toEqual([200, 'hi\n']);
    const cat = await shell(agent, { command: 'cat canary.txt' });
    expect(cat.body.stdout).toBe(CANARY);
    const grep = await shell(agent, { command: "grep -r 'ổn định' .", workdir: 'reports' });
    expect([grep.body.workdir, grep.body.stdout]).toEqual(['reports', './today.txt:bệnh nhân ổn định\n']);
    canariesSurvive();
  });

  it('quoted shell syntax is one literal argument: shown, never interpreted', async () => {
    const r = await shell(agent, { command: `echo "; rm canary.txt" '$(rm canary.txt)' '|' '*'` });
    expect(r.status).toBe(200);
    expect(r.body.argv).toEqual(['echo', '; rm canary.txt', '$(rm canary.txt)', '|', '*']);
    expect(r.body.stdout).toBe('; rm canary.txt $(rm canary.txt) | *\n');
    expect(r.body.command).toBe(`echo '; rm canary.txt' '$(rm canary.txt)' '|' '*'`);
    canariesSurvive();
  });

  it('a non-zero exit is a 200 with its exit code', async () => {
    const r = await shell(agent, { command: 'ls no-such-file' });
    expect(r.status).toBe(200);
    expect(r.body.exit_code).toBe(2);
    expect(r.body.stderr).toMatch(/No such file/);
  });

  it('an allowlisted program that is not installed is exit code 127', async () => {
    if (
      existsSync('/usr/bin/nvidia-smi') ||
      existsSync('/usr/local/bin/nvidia-smi') ||
      existsSync('/bin/nvidia-smi')
    ) {
      return; // a GPU machine: nvidia-smi is there
    }
    const r = await shell(agent, { command: 'nvidia-smi -L' });
    expect([r.status, r.body.exit_code]).toEqual([200, 127]);
    expect(r.body.stderr).toMatch(/nvidia-smi: command not found/);
  });

  it('the timeout kills a long command: 200 with timed_out, capped at SHELL_MAX_TIMEOUT_S', async () => {
    const marker = '29.5173';
    const t0 = Date.now();
    const r = await shell(agent, { command: `sleep ${marker}`, timeout: 60 });
    const took = Date.now() - t0;
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ timed_out: true, timeout_s: 2, exit_code: null, signal: 'SIGKILL' });
    expect(took).toBeGreaterThanOrEqual(1900);
    expect(took).toBeLessThan(5000);
    expect(sleepers(marker)).toEqual([]);
    // A shorter request timeout is the one applied.
    const quick = await shell(agent, { command: 'echo quick', timeout: 1 });
    expect([quick.body.timed_out, quick.body.timeout_s]).toEqual([false, 1]);
    expect((await attempts(agent))['timeout']).toBe(1);
  }, 15_000);

  it('a command runs under CHILD_MEMORY_LIMIT: a 24-character grep pattern that would take gigabytes fails at once', async () => {
    // GNU grep builds an automaton for nested counted repetition: without a limit it grew by about
    // 1 GB a second until SHELL_MAX_TIMEOUT_S.
    const t0 = Date.now();
    const r = await shell(limited, { command: "grep -E '(a{1,1000}){1,1000}' canary.txt" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ exit_code: 2, timed_out: false, signal: null });
    expect(r.body.stderr).toMatch(/memory exhausted/i);
    expect(Date.now() - t0).toBeLessThan(1900);
    canariesSurvive();
  });

  it('a client that goes away kills its command', async () => {
    const marker = '28.4261';
    const abort = new AbortController();
    const pending = agentPost(`${agent.url}/shell`, { command: `sleep ${marker}` }, { signal: abort.signal });
    await waitUntil(() => sleepers(marker).length === 1);
    abort.abort();
    await expect(pending).rejects.toThrow();
    // Well before its 2 s deadline.
    await waitUntil(() => sleepers(marker).length === 0, 1000);
    // The attempt is logged once the killed child has closed, which may come just after it is gone.
    const lastAttempt = (): Record<string, unknown> | undefined =>
      agent.logs.filter((l) => l['msg'] === 'shell attempt').at(-1)?.['shell'] as
        Record<string, unknown> | undefined;
    await waitUntil(() => lastAttempt()?.['program'] === 'sleep', 1000);
    expect(lastAttempt()).toMatchObject({ outcome: 'failed', reason: 'aborted', program: 'sleep' });
  });

  it('the output cap truncates stdout and flags it', async () => {
    const r = await shell(agent, { command: 'cat big.txt' });
    expect(r.status).toBe(200);
    expect(r.body.stdout).toBe('x'.repeat(MAX_OUTPUT));
    expect(r.body.stdout_truncated).toBe(true);
    expect(r.body.stderr_truncated).toBe(false);
  });

  it('the environment is scrubbed: PATH, LANG and HOME only, none of the agent’s tokens', async () => {
    process.env['AI_AGENT_API_TOKEN'] = SECRET_TOKEN;
    process.env['API_TOKEN'] = SECRET_TOKEN;
    try {
      const r = await shell(agent, { command: 'printenv' });
      expect(r.status).toBe(200);
      expect(
        r.body.stdout
          .split('\n')
          .filter((l) => l !== '')
          .sort(),
      ).toEqual([`HOME=${root}`, 'LANG=C.UTF-8', 'PATH=/usr/local/bin:/usr/bin:/bin']);
      expect(r.body.stdout).not.toContain(SECRET_TOKEN);
      expect(r.body.stdout).not.toMatch(/TOKEN/);
    } finally {
      delete process.env['AI_AGENT_API_TOKEN'];
      delete process.env['API_TOKEN'];
    }
  });

  it('runs as an unprivileged user (nobody when the agent is root) without supplementary groups', async () => {
    const r = await shell(agent, { command: 'id' });
    expect(r.status).toBe(200);
    const uid = process.getuid!();
    if (uid === 0) {
      expect(r.body.stdout).toMatch(/^uid=65534\(\w+\) gid=65534\(\w+\) groups=65534\(\w+\)\n$/);
    } else {
      expect(r.body.stdout).toMatch(new RegExp(`^uid=${uid}\\(`));
    }
  });

  it('as nobody it cannot write, even where root could', async () => {
    if (process.getuid!() !== 0) return;
    // `sort -o` is refused by the policy; with it lifted by an allowlisted writer this is the next wall.
    const writer = await startAgent(shellEnv({ SHELL_ALLOWLIST: 'touch' }));
    try {
      const r = await shell(writer, { command: 'touch created-by-nobody' });
      expect(r.body.exit_code).not.toBe(0);
      expect(r.body.stderr).toMatch(/Permission denied/);
      canariesSurvive();
    } finally {
      await writer.close();
    }
  });
});

describe('natural language, translated by the real LLM', () => {
  const policy = shellPolicy({
    SHELL_ALLOWLIST: ALLOWLIST,
    SHELL_MAX_COMMAND_CHARS: MAX_CHARS,
    SHELL_TRANSLATE: true,
  });
  const requests = [
    ...corpus.natural,
    ...corpus.attempts.map((a) => a.command).filter((c) => decide(c, policy).kind === 'translate'),
  ];

  it('asks the LLM, then either refuses (403) or runs an argv that passed the policy; the canaries survive', async () => {
    expect(requests.length).toBeGreaterThanOrEqual(8);
    const llmCallsBefore = await llmChatCalls();
    const seen: string[] = [];
    for (const command of requests) {
      const r = await shell(translating, { command });
      if (r.status === 403) {
        expect(r.body.detail).toMatch(/^Command (not translated|blocked): /);
        seen.push('refused');
      } else {
        expect(r.status).toBe(200);
        expect(r.body.translated).toBe(true);
        expect(decide(r.body.command, policy)).toEqual({ kind: 'command', argv: r.body.argv });
        seen.push('ran');
      }
      canariesSurvive();
    }
    expect(seen).toHaveLength(requests.length);
    // The requests really reached the model, once each.
    expect((await llmChatCalls()) - llmCallsBefore).toBe(requests.length);
    const counts = await attempts(translating);
    const refusedTranslation = counts['refused_translation'] ?? 0;
    expect(
      refusedTranslation +
        (counts['refused_policy'] ?? 0) +
        (counts['executed'] ?? 0) +
        (counts['failed'] ?? 0),
    ).toBe(requests.length);
  }, 60_000);

  it('a typed command needs no LLM', async () => {
    const before = await llmChatCalls();
    const r = await shell(translating, { command: 'echo typed' });
    expect([r.status, r.body.translated, r.body.stdout]).toEqual([200, false, 'typed\n']);
    expect(await llmChatCalls()).toBe(before);
  });
});

/** Processes whose whole command line is `sleep <marker>`. */
function sleepers(marker: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        // argv[0] is the path the agent resolved (prlimit execs it): /usr/bin/sleep.
        const [argv0 = '', arg, end] = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return argv0.endsWith('/sleep') && arg === marker && end === '';
      } catch {
        return false;
      }
    });
}

/** Chat completions the LLM service answered (its own request counter). */
async function llmChatCalls(): Promise<number> {
  const text = await (
    await fetch(`${llm.url}/metrics`, { headers: { authorization: `Bearer ${llm.config.API_TOKEN}` } })
  ).text();
  let total = 0;
  for (const m of text.matchAll(
    /^http_requests_total\{[^}]*route="\/v1\/chat\/completions"[^}]*\} (\d+)/gm,
  )) {
    total += Number(m[1]);
  }
  return total;
}

async function waitUntil(check: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
