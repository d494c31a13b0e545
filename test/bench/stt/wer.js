// Word and character error rates of the speech-to-text service on real recordings, by hand:
//   npm run bench:stt-wer -- [--language en|vi|all] [--backend pocketsphinx|whisper|auto]
//                            [--model /path/ggml-base.bin] [--url http://host:8011] [--verbose]
//
// Sends each utterance of test/bench/stt/corpus.js (fetched on first use, sha256-checked, cached in
// $CLINICALSUITE_HOME/fixtures/stt/wer) to `POST /transcribe` with the language and backend asked
// for, and prints WER, CER and diacritic-free CER per language and backend (scorer.js says how text
// is normalised). Without --url it starts the built service (services/stt/dist/main.js) on a free
// loopback port, with auth off and STT_WHISPER_MODEL set to --model (or $STT_WHISPER_MODEL) when one
// is given. Defaults: --language all, --backend pocketsphinx for en and whisper for vi.
// With --url, STT_API_TOKEN is sent as the bearer token.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ensureCorpus, SOURCES } from './corpus.js';
import { aggregate, scoreUtterance } from './scorer.js';

const root = new URL('../../../', import.meta.url).pathname;
const LANGUAGES = ['en', 'vi'];
const BACKENDS = ['auto', 'pocketsphinx', 'whisper'];

function usage(message) {
  console.error(`${message}\n\nusage: node test/bench/stt/wer.js [--language en|vi|all] [--backend auto|pocketsphinx|whisper]
       [--model /path/ggml-*.bin] [--url http://host:port] [--verbose] [--json]`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      language: { type: 'string', default: 'all' },
      backend: { type: 'string' },
      model: { type: 'string' },
      url: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  }).values;
} catch (error) {
  usage(error.message);
}
const languages = args.language === 'all' ? LANGUAGES : [args.language];
if (!languages.every((l) => LANGUAGES.includes(l))) usage(`--language must be en, vi or all`);
if (args.backend !== undefined && !BACKENDS.includes(args.backend))
  usage(`--backend must be ${BACKENDS.join(', ')}`);
const backendFor = (language) => args.backend ?? (language === 'en' ? 'pocketsphinx' : 'whisper');
const model = args.model ?? process.env.STT_WHISPER_MODEL;
if (args.url === undefined && languages.some((l) => backendFor(l) === 'whisper') && model === undefined) {
  usage('the whisper backend needs a ggml Whisper model: --model /path/ggml-base.bin (or STT_WHISPER_MODEL)');
}

const freePort = () =>
  new Promise((done) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });

async function startService() {
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTH_DISABLED: 'true',
    LOG_LEVEL: 'warn',
    MAX_CONCURRENCY: '1',
  };
  if (model !== undefined) env.STT_WHISPER_MODEL = resolve(model);
  const child = spawn(process.execPath, [`${root}services/stt/dist/main.js`], {
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  // Ready when every backend asked for is ready (Whisper loads after pocketsphinx).
  const wanted = new Set(languages.map(backendFor).filter((b) => b !== 'auto'));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the stt service exited with code ${child.exitCode}`);
    const health = await fetch(`${url}/health`).then(
      (r) => r.json(),
      () => undefined,
    );
    const backends = health?.backends ?? {};
    if (health?.status === 'healthy' && [...wanted].every((b) => backends[b]?.state === 'ready')) break;
    const failed = [...wanted].find(
      (b) => backends[b]?.state === 'failed' || backends[b]?.state === 'disabled',
    );
    if (failed !== undefined)
      throw new Error(`${failed}: ${backends[failed].reason ?? backends[failed].state}`);
    if (performance.now() - started > 300_000) throw new Error('the stt service was not ready in 300 s');
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    stop: () =>
      new Promise((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
      }),
  };
}

async function transcribe(url, utterance, backend) {
  const form = new FormData();
  form.append('language', utterance.language);
  form.append('backend', backend);
  form.append('file', new Blob([readFileSync(utterance.audio)]), basename(utterance.audio));
  const headers = {};
  if (args.url !== undefined && process.env.STT_API_TOKEN)
    headers.authorization = `Bearer ${process.env.STT_API_TOKEN}`;
  const res = await fetch(`${url}/transcribe`, { method: 'POST', body: form, headers });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${utterance.id}: HTTP ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

const corpus = await ensureCorpus(languages, { log: (m) => console.error(m) });
const service =
  args.url === undefined ? await startService() : { url: args.url, stop: async () => undefined };
const results = [];
try {
  for (const language of languages) {
    const backend = backendFor(language);
    const utterances = corpus.filter((u) => u.language === language);
    const scores = [];
    let engine;
    let audioSeconds = 0;
    let processingMs = 0;
    for (const u of utterances) {
      const body = await transcribe(service.url, u, backend);
      engine = `${body.backend}: ${body.model ?? body.engine}`;
      const score = scoreUtterance(u.reference, body.text ?? '');
      scores.push(score);
      audioSeconds += body.duration_seconds ?? 0;
      processingMs += body.processing_time_ms ?? 0;
      if (args.verbose) {
        console.log(`${u.id}  WER ${score.words.errors}/${score.words.total}`);
        console.log(`  ref: ${u.reference}\n  hyp: ${body.text}`);
      }
    }
    const total = aggregate(scores);
    results.push({ language, backend, engine, audioSeconds, processingMs, ...total });
  }
} finally {
  await service.stop();
}

if (args.json) {
  console.log(JSON.stringify(results, null, 2));
} else {
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  for (const r of results) {
    const sources = [...new Set(corpus.filter((u) => u.language === r.language).map((u) => u.source))];
    console.log(
      `${r.language} ${r.backend} (${r.engine}): WER ${pct(r.wer)} (${r.wordErrors}/${r.referenceWords} words), ` +
        `CER ${pct(r.cer)} (${r.charErrors}/${r.referenceChars}), CER without diacritics ${pct(r.cerNoDiacritics)}; ` +
        `${r.utterances} utterances, ${r.audioSeconds.toFixed(1)} s of audio, real-time factor ` +
        `${(r.processingMs / 1000 / r.audioSeconds).toFixed(2)}; data: ${sources.map((s) => SOURCES[s].package).join(', ')}`,
    );
  }
}
