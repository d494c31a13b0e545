// The reasoning engine's evaluation harness.
//
//   npm run eval:reasoning -- [cases.json] [--url URL] [--rules-only] [--top-k N] [--kb DIR] [--json OUT]
//
// Sends every case of a case file (default: cases/semigran-2015.json, the published vignettes of the
// external benchmark; any file in the same format works, see cases/README.md) as free text to
// POST /api/v1/diagnosis, one at a time, and prints a per-case table (expected condition, top 3 with
// probabilities, rank of the expected or an also-accepted condition) and the summary: top-1/3/10
// accuracy, Brier score, expected calibration error of the top-1 probability, the cases whose
// expected condition the loaded base cannot score (listed separately, never dropped), failed
// requests, and the model and knowledge-base versions with the calibration in use. A case file with
// `anchors` (published figures of symptom checkers and physicians on the same set) also gets the
// benchmark table: top-1/top-3 per language over every case and over the cases whose answer the base
// in --kb (default: the shipped primary-care base) covers, beside the anchors.
//
// Without --url it starts services/reasoning/dist/main.js (build first: `npm run build`) on a free
// loopback port with this process's environment (LLM_URL, REASONING_* ...) and stops it at the end.
// --rules-only sends use_llm: false (the rule pass alone). --json writes the outcomes and summary.
// Exit status: 0 when every case got a response, 1 when some request failed, 2 on bad usage or when
// the service cannot be started.
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, parseArgs as parseCommonArgs, REQUEST_TIMEOUT_MS, runMain, UsageError } from './cli.js';
import {
  benchmarkFigures,
  conditionIdsFromCsv,
  failedOutcome,
  formatBenchmark,
  formatCaseTable,
  formatSummary,
  loadCaseFile,
  scoreResponse,
  summarize,
} from './lib.js';
import { postDiagnosis } from './service.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const BENCHMARK_CASES = join(HERE, 'cases/semigran-2015.json');
const SHIPPED_KB = join(HERE, '../../../services/reasoning/kb/primary-care');

const USAGE =
  'usage: npm run eval:reasoning -- [cases.json] [--url URL] [--rules-only] [--top-k N] [--kb DIR] [--json OUT]';

/** @param {string[]} argv */
function parseArgs(argv) {
  return parseCommonArgs(
    argv,
    // Without a case file: the external benchmark (published vignettes), not cases/primary-care.json.
    { cases: BENCHMARK_CASES, topK: 50, json: /** @type {string | null} */ (null), kb: SHIPPED_KB },
    (options, arg, value) => {
      if (arg === '--json') options.json = value();
      else if (arg === '--kb') options.kb = resolve(value());
      else if (arg === '--top-k') {
        const k = Number(value());
        if (!Number.isInteger(k) || k < 1 || k > 50)
          throw new UsageError('--top-k must be an integer from 1 to 50');
        options.topK = k;
      } else return false;
      return true;
    },
  );
}

/**
 * @param {string} url
 * @param {import('./lib.js').EvalCase} evalCase
 * @param {{ rulesOnly: boolean, topK: number }} options
 */
function diagnose(url, evalCase, options) {
  const body = {
    text: evalCase.text,
    top_k: options.topK,
    next_findings: 0,
    ...(options.rulesOnly ? { use_llm: false } : {}),
  };
  return postDiagnosis(url, body, REQUEST_TIMEOUT_MS);
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const file = await loadCaseFile(options.cases);
  const service = await connect(options.url);
  console.log(
    `evaluating ${file.cases.length} cases from ${options.cases} against ${service.url}` +
      (options.rulesOnly ? ' (rules only)' : ''),
  );
  /** @type {import('./lib.js').CaseOutcome[]} */
  const outcomes = [];
  try {
    for (const evalCase of file.cases) {
      try {
        outcomes.push(scoreResponse(evalCase, await diagnose(service.url, evalCase, options), options.topK));
      } catch (error) {
        outcomes.push(failedOutcome(evalCase, error instanceof Error ? error.message : String(error)));
      }
    }
  } finally {
    await service.stop();
  }
  const summary = summarize(outcomes);
  console.log('');
  console.log(formatCaseTable(outcomes));
  console.log('');
  console.log(formatSummary(summary));
  if (file.anchors !== undefined) {
    const covered = conditionIdsFromCsv(await readFile(join(options.kb, 'conditions.csv'), 'utf8'));
    console.log('');
    console.log(`benchmark (conditions covered: those of ${options.kb})`);
    console.log(formatBenchmark(benchmarkFigures(file.cases, outcomes, covered), file.anchors));
  }
  if (options.json !== null) {
    await writeFile(
      options.json,
      JSON.stringify(
        { cases: options.cases, url: service.url, rulesOnly: options.rulesOnly, outcomes, summary },
        null,
        2,
      ),
    );
    console.log(`wrote ${options.json}`);
  }
  return summary.failed.length > 0 ? 1 : 0;
}

runMain('eval:reasoning', USAGE, main);
