/**
 * Bearer auth is on by default in every service that takes data, and a token opens only the
 * services its scope names: each service is built from its own configuration (no AUTH_DISABLED),
 * sharing one tokens file in which each line names its service, and every route of its OpenAPI
 * document is called without a token, with a token of another service (`tok-tts tts`, the issue's
 * attack) and with its own. Only the documented public routes answer without a token
 * (README.md, "Security").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger, serve, type KitApp, type RunningServer } from '@clinicalsuite/kit';
import { buildAgentApp } from '../../services/agent/src/app.js';
import { loadAgentConfig } from '../../services/agent/src/config.js';
import { buildCodesearchApp } from '../../services/codesearch/src/app.js';
import { loadCodesearchConfig } from '../../services/codesearch/src/config.js';
import { buildFaceApp } from '../../services/face/src/app.js';
import { loadFaceConfig } from '../../services/face/src/config.js';
import { buildLlmApp } from '../../services/llm/src/app.js';
import { loadLlmConfig } from '../../services/llm/src/config.js';
import { buildMedllmApp } from '../../services/medllm/src/app.js';
import { loadMedllmConfig } from '../../services/medllm/src/config.js';
import { buildOcrApp } from '../../services/ocr/src/app.js';
import { loadOcrConfig } from '../../services/ocr/src/config.js';
import { buildPatientSimApp } from '../../services/patient-sim/src/app.js';
import { loadPatientSimConfig } from '../../services/patient-sim/src/config.js';
import { buildReasoningApp } from '../../services/reasoning/src/app.js';
import { loadReasoningConfig } from '../../services/reasoning/src/config.js';
import { buildSttApp } from '../../services/stt/src/app.js';
import { loadSttConfig } from '../../services/stt/src/config.js';
import { buildTaskAgentApp } from '../../services/task-agent/src/app.js';
import { loadTaskAgentConfig } from '../../services/task-agent/src/config.js';
import { buildTtsApp } from '../../services/tts/src/app.js';
import { loadTtsConfig } from '../../services/tts/src/config.js';

type Env = Record<string, string>;

interface Case {
  readonly name: string;
  readonly scope: string;
  /** Routes (`METHOD /path`) served without a token. */
  readonly open: readonly string[];
  /** The status of a token of another service: 401 where the spec says an unaccepted token is invalid. */
  readonly wrongScope: 401 | 403;
  readonly build: (env: Env) => { kit: KitApp; close?: () => void | Promise<void> };
}

/** Served without a token by every service: probes, metrics and the API description. */
const KIT_OPEN = ['GET /livez', 'GET /readyz', 'GET /metrics', 'GET /openapi.json', 'GET /docs'];

const quiet = createLogger({ service: 'test', level: 'silent' });
const deps = { logger: quiet, processMetrics: false } as const;
const nowhere = 'http://127.0.0.1:9';

const CASES: readonly Case[] = [
  {
    name: 'llm',
    scope: 'llm',
    open: [],
    wrongScope: 403,
    build: (env) => buildLlmApp({ config: loadLlmConfig(env), ...deps }),
  },
  {
    name: 'agent',
    scope: 'ai_agent',
    open: ['GET /', 'GET /health', 'GET /capabilities'],
    wrongScope: 401,
    build: (env) => buildAgentApp({ config: loadAgentConfig({ LLM_URL: nowhere, ...env }), ...deps }),
  },
  {
    name: 'face',
    scope: 'face',
    open: [],
    wrongScope: 403,
    build: (env) => buildFaceApp({ config: loadFaceConfig(env), ...deps }),
  },
  {
    name: 'medllm',
    scope: 'medllm',
    open: ['GET /health'],
    wrongScope: 403,
    build: (env) => buildMedllmApp({ config: loadMedllmConfig(env), ...deps }),
  },
  {
    name: 'reasoning',
    scope: 'reasoning',
    open: ['GET /', 'GET /health'],
    wrongScope: 403,
    build: (env) => buildReasoningApp({ config: loadReasoningConfig(env), ...deps }),
  },
  {
    name: 'task_agent',
    scope: 'task_agent',
    open: ['GET /', 'GET /health'],
    wrongScope: 403,
    build: (env) =>
      buildTaskAgentApp({
        config: loadTaskAgentConfig({
          LLM_URL: nowhere,
          TASK_AGENT_DB: join(env['DATA_DIR']!, 'tasks.sqlite'),
          ...env,
        }),
        ...deps,
      }),
  },
  {
    name: 'stt',
    scope: 'stt',
    open: ['GET /health'],
    wrongScope: 403,
    build: (env) => buildSttApp({ config: loadSttConfig(env), ...deps }),
  },
  {
    name: 'ocr',
    scope: 'ocr',
    open: [],
    wrongScope: 403,
    build: (env) => buildOcrApp({ config: loadOcrConfig(env), ...deps }),
  },
  {
    name: 'tts',
    scope: 'tts',
    open: [],
    wrongScope: 403,
    build: (env) => buildTtsApp({ config: loadTtsConfig(env), ...deps }),
  },
  {
    name: 'codesearch',
    scope: 'codesearch',
    open: ['GET /', 'GET /health'],
    wrongScope: 403,
    build: (env) => buildCodesearchApp({ config: loadCodesearchConfig(env), ...deps }),
  },
  {
    name: 'patient_sim',
    scope: 'patient_sim',
    open: ['GET /', 'GET /health'],
    wrongScope: 403,
    build: (env) =>
      buildPatientSimApp({ config: loadPatientSimConfig({ LLM_URL: nowhere, ...env }), ...deps }),
  },
];

let dir: string;
let tokensFile: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'auth-by-default-'));
  tokensFile = join(dir, 'tokens');
  writeFileSync(
    tokensFile,
    ['# one file for every service: a line opens the services it names', 'tok-tts tts']
      .concat(CASES.map((c) => `tok-own-${c.scope} ${c.scope}`))
      .join('\n') + '\n',
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `GET /x/{id}` → a concrete path (`/x/someone`). */
function concrete(path: string): string {
  return path.replace(/\{[^}]+\}/g, 'someone');
}

describe.each(CASES)('$name: auth on by default', (c) => {
  let server: RunningServer;
  let close: (() => void | Promise<void>) | undefined;
  let routes: string[];

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(dir, `${c.name}-`));
    const env: Env = {
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
      // No models: the services stay not ready, which auth does not need.
      MODELS_DIR: mkdtempSync(join(dir, `${c.name}-models-`)),
      NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
      AUTH_TOKENS_FILE: tokensFile,
      SHUTDOWN_GRACE_MS: '500',
    };
    const service = c.build(env);
    close = service.close;
    server = await serve(service.kit, { signals: [], exit: false, onShutdown: () => close?.() });
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
  });

  afterAll(async () => server.shutdown('test finished'));

  const call = (route: string, token?: string) => {
    const [method, path] = route.split(' ') as [string, string];
    return fetch(`${server.url}${concrete(path)}`, {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(method === 'GET' || method === 'DELETE' ? {} : { 'content-type': 'application/json' }),
      },
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }),
    });
  };

  it('answers 401 without a token on every route but the documented public ones', async () => {
    expect(routes.length).toBeGreaterThan(KIT_OPEN.length);
    const open: string[] = [];
    for (const route of routes) {
      const res = await call(route);
      await res.arrayBuffer();
      if (res.status === 401) {
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
      } else open.push(`${route} (${res.status})`);
    }
    const documented = new Set([...KIT_OPEN, ...c.open]);
    expect(open.filter((r) => !documented.has(r.replace(/ \(\d+\)$/, '')))).toEqual([]);
  });

  it('refuses a token of another service, and accepts its own', async () => {
    const guarded = routes.filter((r) => ![...KIT_OPEN, ...c.open].includes(r));
    for (const route of guarded) {
      const other = await call(route, 'tok-tts');
      await other.arrayBuffer();
      if (c.scope !== 'tts') expect([route, other.status]).toEqual([route, c.wrongScope]);
      // Accepted: whatever the route answers next (a 403 of its own, such as a disabled shell,
      // carries no bearer challenge).
      const own = await call(route, `tok-own-${c.scope}`);
      await own.arrayBuffer();
      expect([route, own.status === 401, own.headers.get('www-authenticate')]).toEqual([route, false, null]);
    }
  });
});

describe('a service without any token', () => {
  it('refuses to start, naming its token variable', () => {
    expect(() => buildFaceApp({ config: loadFaceConfig({}), ...deps })).toThrow(
      /FACE_API_TOKEN: is required/,
    );
  });
});
