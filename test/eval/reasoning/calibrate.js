// Fitting the reasoning engine's calibration exponent α on the evaluation cases, cross-validated
// (issue 9: "probabilities that are calibrated, not just softmax scores").
//
//   npm run build --silent && node test/eval/reasoning/calibrate.js [cases.json] [--url URL]
//       [--rules-only] [--folds K] [--out FILE] [--json REPORT]
//
// 1. Sends every case of the case file (default: cases/primary-care.json) once to POST
//    /api/v1/diagnosis (starting services/reasoning/dist/main.js on a free loopback port with this
//    process's environment and REASONING_CALIBRATION=none, unless --url) and keeps the findings the
//    chain extracted (`findings` of the response). --rules-only sends use_llm: false.
// 2. Loads the same bases here (REASONING_KB_DIRS / REASONING_HPO_KB_DIR / MODELS_DIR, as the
//    service does; a --url service must name the same bases and versions) and compiles the
//    uncalibrated model with the engine's own compileModel (services/reasoning/dist/engine).
// 3. Labels each case: truth = the expected condition when the loaded base scores it, else null
//    ("none of these", the engine's unknown hypothesis). Failed requests are listed, not used.
// 4. K-fold cross-validation (K = 5 unless --folds; each case's fold is fixed by a hash of its id,
//    so reruns are identical): α fitted with fitCalibration on the other folds, held-out log loss,
//    Brier, ECE and top-1 at α = 1 and at the fitted α, per fold and pooled (calibrate-lib.js).
// 5. Fits α on all cases and prints the calibration JSON for the loaded base (kbId, kbVersion, fit
//    statistics); --out FILE writes it (e.g. services/reasoning/kb/primary-care/calibration.json,
//    which the service then loads by default for that base id and version). --json writes the
//    whole report (cases, labels, folds, figures).
//
// Refit whenever the base changes: a calibration names the base version it was fitted for and the
// service refuses it for any other. Exit status: 0 done, 1 when some request failed (the fit used
// the others), 2 on bad usage, a base that cannot be loaded or a service that cannot be started.
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  crossValidate,
  DEFAULT_FOLDS,
  formatCrossValidation,
  labelCase,
  responseFindings,
} from './calibrate-lib.js';
import { connect, parseArgs as parseCommonArgs, REQUEST_TIMEOUT_MS, runMain, UsageError } from './cli.js';
import { loadCaseFile } from './lib.js';
import { postDiagnosis, ROOT, ServiceStartError } from './service.js';

const USAGE =
  'usage: node test/eval/reasoning/calibrate.js [cases.json] [--url URL] [--rules-only] [--folds K] [--out FILE] [--json REPORT]';

/** @param {string[]} argv */
function parseArgs(argv) {
  const defaults = {
    folds: DEFAULT_FOLDS,
    out: /** @type {string | null} */ (null),
    json: /** @type {string | null} */ (null),
  };
  return parseCommonArgs(argv, defaults, (options, arg, value) => {
    if (arg === '--out') options.out = resolve(value());
    else if (arg === '--json') options.json = resolve(value());
    else if (arg === '--folds') {
      const k = Number(value());
      if (!Number.isInteger(k) || k < 2 || k > 50)
        throw new UsageError('--folds must be an integer from 2 to 50');
      options.folds = k;
    } else return false;
    return true;
  });
}

/** @param {string} rel */
async function dist(rel) {
  const path = join(ROOT, 'services/reasoning/dist', rel);
  try {
    return await import(pathToFileURL(path).href);
  } catch (error) {
    throw new ServiceStartError(
      `cannot load ${path} (build first: npm run build): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** @param {number} x @param {number} [digits] */
const fmt = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const file = await loadCaseFile(options.cases);
  const engine = await dist('engine/index.js');
  const { loadMergedBases, KnowledgeUnavailable } = await dist('pipeline/knowledge.js');
  const { loadReasoningConfig } = await dist('config.js');

  // The bases the service loads, merged the same way, compiled uncalibrated (α = 1).
  const config = loadReasoningConfig(process.env);
  let merged;
  try {
    merged = await loadMergedBases(config.kbDirs);
  } catch (error) {
    if (error instanceof KnowledgeUnavailable)
      throw new ServiceStartError(`the bases cannot be loaded: ${error.message}`);
    throw error;
  }
  const model = engine.compileModel(merged.knowledgeBase);
  const bases = merged.bases.map((/** @type {any} */ b) => `${b.id}@${b.version}`);
  console.log(
    `calibrating for ${model.kbId}@${model.kbVersion} (${bases.join(' + ')} from ${config.kbDirs.join(', ')}; ` +
      `${model.conditions.length} scorable conditions) on ${file.cases.length} cases from ${options.cases}` +
      (options.rulesOnly ? ' (rules only)' : ''),
  );

  // The service (uncalibrated, so a stale calibration.json cannot stop it) extracts the findings.
  const service = await connect(options.url, { ...process.env, REASONING_CALIBRATION: 'none' });
  /** @type {{ id: string, expected: string, findings: { feature: string, present: boolean, certainty: number }[] }[]} */
  const extracted = [];
  /** @type {{ id: string, error: string }[]} */
  const failed = [];
  let maxDifference = 0;
  try {
    for (const c of file.cases) {
      try {
        const response = await postDiagnosis(
          service.url,
          { text: c.text, top_k: 50, next_findings: 0, ...(options.rulesOnly ? { use_llm: false } : {}) },
          REQUEST_TIMEOUT_MS,
        );
        const served = (response?.model?.knowledge_bases ?? []).map(
          (/** @type {any} */ b) => `${b.id}@${b.version}`,
        );
        if (served.join(' + ') !== bases.join(' + '))
          throw new ServiceStartError(
            `the service at ${service.url} scores ${served.join(' + ') || '(no base named)'}, not ${bases.join(' + ')} loaded here: set the same REASONING_KB_DIRS`,
          );
        const findings = responseFindings(response);
        extracted.push({ id: c.id, expected: c.expected.condition_id, findings });
        // The service's probabilities against this process's scoring of the same findings.
        const alpha = response.model?.calibration?.alpha ?? 1;
        const posterior = engine.posteriorFromLlr(
          model,
          engine.logLikelihoodRatios(model, engine.encodeFindings(model, findings)),
          alpha,
        );
        for (const d of response.diagnoses) {
          const i = model.conditionIndex.get(d.condition_id);
          if (i !== undefined)
            maxDifference = Math.max(maxDifference, Math.abs(d.probability - posterior[i]));
        }
        maxDifference = Math.max(
          maxDifference,
          Math.abs(response.unknown_probability - posterior[model.unknownIndex]),
        );
      } catch (error) {
        if (error instanceof ServiceStartError) throw error;
        failed.push({ id: c.id, error: error instanceof Error ? error.message : String(error) });
      }
    }
  } finally {
    await service.stop();
  }
  if (extracted.length === 0) throw new ServiceStartError('no case got a response: nothing to fit on');

  const cases = extracted.map((c) => labelCase(model, c));
  const scorable = cases.filter((c) => c.truth !== null).length;
  console.log(
    `cases: ${file.cases.length} sent, ${cases.length} answered (${scorable} whose condition the base scores, ` +
      `${cases.length - scorable} labelled "none of these"), ${failed.length} failed; ` +
      `largest difference between the service's probabilities and this scoring: ${maxDifference.toExponential(2)}`,
  );
  if (failed.length > 0)
    console.log(`failed (not used): ${failed.map((f) => `${f.id} (${f.error})`).join('; ')}`);

  const cv = crossValidate(engine, model, cases, { k: options.folds });
  console.log('');
  console.log(
    `${cv.k}-fold cross-validation (fold = sha256(case id) mod ${cv.k}); held-out figures at α = 1 and at the α fitted on the other folds.`,
  );
  console.log(
    'log loss: mean −ln p(truth), nats; Brier: multi-class over the conditions and "none of these"; ECE: top-label, 10 bins;',
  );
  console.log(
    'top-1: "none of these" ranked among the conditions, all cases; top-1 scored: among the conditions, cases the base scores.',
  );
  console.log(formatCrossValidation(cv));

  const calibration = engine.fitCalibration(model, cases);
  const fit = calibration.fit;
  console.log('');
  console.log(
    `α fitted on all ${fit.cases} cases: ${fmt(calibration.alpha, 6)}${fit.atBound ? ' (at the search bound)' : ''} ` +
      `after ${fit.iterations} Newton steps; in-sample log loss ${fmt(fit.logLossBefore, 4)} → ${fmt(fit.logLossAfter, 4)} ` +
      `(the cross-validated figures above are the honest ones).`,
  );
  // The stored form is checked with the schema the service parses it with, and against the base.
  const stored = engine.parseCalibration(JSON.parse(JSON.stringify(calibration)));
  engine.compileModel(merged.knowledgeBase, stored);
  const text = `${JSON.stringify(stored, null, 2)}\n`;
  if (options.out !== null) {
    await writeFile(options.out, text);
    console.log(`wrote ${options.out} (for ${stored.kbId}@${stored.kbVersion})`);
  } else {
    console.log(text.trimEnd());
  }
  if (options.json !== null) {
    await writeFile(
      options.json,
      `${JSON.stringify(
        {
          casesFile: options.cases,
          rulesOnly: options.rulesOnly,
          base: { id: model.kbId, version: model.kbVersion, dirs: config.kbDirs },
          labels: cases.map((c) => ({
            id: c.id,
            expected: c.expected,
            truth: c.truth,
            findings: c.findings.length,
          })),
          failed,
          crossValidation: cv,
          calibration: stored,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`wrote ${options.json}`);
  }
  return failed.length > 0 ? 1 : 0;
}

runMain('calibrate', USAGE, main);
