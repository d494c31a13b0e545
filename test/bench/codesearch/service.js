// The built code search service started for a benchmark (test/bench/codesearch/recall.js,
// test/bench/subservices/codesearch.js): on a free loopback port, with the real code sets and the
// embedding model fetched through the model store, then waited for until its ICD-10 title vectors
// are built (they are cached in the data dir; services/codesearch/README.md says how long).
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel } from '@clinicalsuite/kit/models';

const root = new URL('../../../', import.meta.url).pathname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The manifest ids the service needs for `sets` (code-set ids) and the embedder the environment
 * picks (CODESEARCH_EMBEDDER=minilm, else e5), unless the environment names the files itself.
 */
function modelIds(sets, env) {
  const minilm = env.CODESEARCH_EMBEDDER === 'minilm';
  const ids = [...sets];
  if (env.CODESEARCH_EMBEDDING_MODEL_PATH === undefined)
    ids.push(minilm ? 'codesearch-embedder' : 'codesearch-e5');
  if (env.CODESEARCH_EMBEDDING_TOKENIZER_PATH === undefined)
    ids.push(minilm ? 'codesearch-embedder-tokenizer' : 'codesearch-e5-tokenizer');
  return ids;
}

/**
 * Starts the service over `sets` with `env` added, waits for /health and then the ICD-10 vectors
 * (at most `waitS` seconds, printing progress every 30 s). Returns its URL, `json(path, body?)`
 * (GET, or POST with a JSON body), the embedding model it reports, and `stop()`.
 */
export async function startBenchCodesearch({ dataDir, threads, waitS, sets, env = {} }) {
  const modelsDir = defaultModelsDir(process.env);
  for (const id of modelIds(sets, process.env)) await ensureModel(MODEL_MANIFEST[id], { modelsDir });
  mkdirSync(dataDir, { recursive: true });
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn(process.execPath, [join(root, 'services/codesearch/dist/main.js')], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      MODELS_DIR: modelsDir,
      DATA_DIR: dataDir,
      AUTH_DISABLED: 'true',
      LOG_LEVEL: 'warn',
      CODESEARCH_THREADS: threads,
      NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const stop = () => child.kill('SIGTERM');
  process.on('exit', stop);
  const url = `http://127.0.0.1:${port}`;
  const json = async (path, body) => {
    const res = await fetch(`${url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };

  const started = performance.now();
  for (;;) {
    const ok = await json('/health').then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error('the service exited');
    await sleep(200);
  }
  console.log(
    `service ready in ${((performance.now() - started) / 1000).toFixed(1)} s (sets imported, index built)`,
  );
  let lastLog = 0;
  let model;
  for (;;) {
    const { body } = await json('/code_types');
    model = body.embedding_model;
    const icd = body.types.find((t) => t.type === 'ICD10');
    if (icd?.vectors.state === 'ready') break;
    if (icd === undefined || ['off', 'failed'].includes(icd.vectors.state))
      throw new Error(`ICD10 vectors unavailable: ${JSON.stringify(icd?.vectors ?? body.embedding_model)}`);
    if ((performance.now() - started) / 1000 > waitS)
      throw new Error('gave up waiting for the ICD10 vectors');
    if (performance.now() - lastLog > 30_000) {
      console.log(
        `waiting for the ICD10 title vectors: ${icd.vectors.done ?? 0}/${icd.vectors.total ?? '?'}`,
      );
      lastLog = performance.now();
    }
    await sleep(1000);
  }
  console.log(`ICD10 title vectors ready after ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return { url, json, model, stop };
}
