// The reasoning evaluation's pure parts: the case-file format (zod) and its loader, turning one
// /api/v1/diagnosis response into a scored case, and the aggregate figures (top-k accuracy, Brier
// score, expected calibration error). Plain ESM JavaScript with JSDoc, so the harness runs without
// a build and jest tests it directly (lib.d.ts carries the types for the TypeScript tests).
import { readFile } from 'node:fs/promises';
import { z } from 'zod';

export const CASE_FORMAT = 'clinicalsuite.reasoning-cases/v1';
export const LANGUAGES = /** @type {const} */ (['en', 'vi']);

const nonBlank = z.string().trim().min(1, 'must not be empty');

export const caseSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-"'),
  language: z.enum(LANGUAGES),
  text: nonBlank,
  expected: z.strictObject({
    condition_id: nonBlank,
    icd10: z
      .string()
      .regex(/^[A-Z][0-9]{2}(\.[0-9A-Z]{1,4})?$/, 'must be an ICD-10 code such as A90 or J18.9'),
    /** Other conditions the source counts as the right answer (its "acceptable" diagnoses). */
    also_accepted: z.array(nonBlank).optional(),
  }),
  source: z.strictObject({
    citation: nonBlank,
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    locator: nonBlank,
  }),
  notes: z.string().optional(),
});

/** A published figure the set was scored on (symptom checkers, physicians), for the benchmark table. */
export const anchorSchema = z.strictObject({
  who: nonBlank,
  top1: z.number().min(0).max(1),
  top3: z.number().min(0).max(1),
  citation: nonBlank,
});

export const caseFileSchema = z.strictObject({
  format: z.literal(CASE_FORMAT, { error: `must be "${CASE_FORMAT}"` }),
  description: z.string().optional(),
  anchors: z.array(anchorSchema).optional(),
  cases: z.array(z.unknown()).min(1, 'must hold at least one case'),
});

/** A case file that cannot be used; `message` names the file, the case and the field. */
export class CaseFileError extends Error {
  /** @param {string} message @param {string[]} problems */
  constructor(message, problems) {
    super(`${message}:\n  - ${problems.join('\n  - ')}`);
    this.name = 'CaseFileError';
    this.problems = problems;
  }
}

/** @param {readonly PropertyKey[]} path */
function fieldOf(path) {
  return path.length === 0
    ? '(root)'
    : path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
}

/**
 * Validates a parsed case file; throws CaseFileError listing every problem as
 * `<file>: case "<id>" (cases[i]) field <path>: <message>`.
 * @param {unknown} json
 * @param {string} file label used in messages
 * @returns {{ format: string, description?: string, cases: import('./lib.js').EvalCase[] }}
 */
export function parseCaseFile(json, file) {
  const problems = [];
  const top = caseFileSchema.safeParse(json);
  if (!top.success) {
    for (const issue of top.error.issues)
      problems.push(`${file}: field ${fieldOf(issue.path)}: ${issue.message}`);
    throw new CaseFileError(`${file} is not a reasoning case file`, problems);
  }
  /** @type {import('./lib.js').EvalCase[]} */
  const cases = [];
  const seen = new Map();
  top.data.cases.forEach((raw, i) => {
    const rawId =
      raw !== null && typeof raw === 'object' && 'id' in raw && typeof raw.id === 'string' ? raw.id : null;
    const who = `${file}: case ${rawId === null ? '(no id)' : JSON.stringify(rawId)} (cases[${i}])`;
    const parsed = caseSchema.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problems.push(`${who} field ${fieldOf(issue.path)}: ${issue.message}`);
      return;
    }
    const first = seen.get(parsed.data.id);
    if (first !== undefined) {
      problems.push(`${who} field id: duplicate id, first used by cases[${first}]`);
      return;
    }
    seen.set(parsed.data.id, i);
    cases.push(parsed.data);
  });
  if (problems.length > 0) throw new CaseFileError(`${file} has ${problems.length} problem(s)`, problems);
  return {
    format: top.data.format,
    ...(top.data.description === undefined ? {} : { description: top.data.description }),
    ...(top.data.anchors === undefined ? {} : { anchors: top.data.anchors }),
    cases,
  };
}

/**
 * Reads and validates a case file (CaseFileError when unreadable, not JSON or invalid).
 * @param {string} path
 */
export async function loadCaseFile(path) {
  let text;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CaseFileError(`cannot read case file ${path}`, [
      error instanceof Error ? error.message : String(error),
    ]);
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CaseFileError(`${path} is not JSON`, [error instanceof Error ? error.message : String(error)]);
  }
  return parseCaseFile(json, path);
}

/**
 * Condition ids of a knowledge base's conditions.csv (first column, header `id`), for checking
 * that every case's expected condition exists in the base.
 * @param {string} csvText
 */
export function conditionIdsFromCsv(csvText) {
  const lines = csvText.split(/\r?\n/).filter((l) => l.trim() !== '');
  const header = lines[0]?.split(',')[0];
  if (header !== 'id')
    throw new Error(`conditions.csv: the first column is ${JSON.stringify(header)}, "id" expected`);
  return new Set(lines.slice(1).map((l) => l.split(',')[0] ?? ''));
}

/**
 * One case's outcome from a 200 response of POST /api/v1/diagnosis requested with `topK`.
 * `status`: `ranked` (the expected condition is in the returned list, at `rank`), `not_scorable`
 * (absent while the service returned fewer than `topK` diagnoses: every condition it can score was
 * returned, so the loaded base cannot score the expected one), or `outside_top_k` (absent from a
 * full list of `topK`).
 * @param {import('./lib.js').EvalCase} evalCase
 * @param {any} response
 * @param {number} topK
 * @returns {import('./lib.js').CaseOutcome}
 */
export function scoreResponse(evalCase, response, topK) {
  if (response === null || typeof response !== 'object' || !Array.isArray(response.diagnoses))
    throw new TypeError(`case ${evalCase.id}: the response has no diagnoses array`);
  if (typeof response.unknown_probability !== 'number')
    throw new TypeError(`case ${evalCase.id}: the response has no unknown_probability`);
  /** @type {{ condition_id: string, probability: number }[]} */
  const diagnoses = response.diagnoses.map((/** @type {any} */ d, /** @type {number} */ i) => {
    if (typeof d?.condition_id !== 'string' || typeof d?.probability !== 'number')
      throw new TypeError(`case ${evalCase.id}: diagnoses[${i}] lacks condition_id or probability`);
    return { condition_id: d.condition_id, probability: d.probability };
  });
  const accepted = acceptedIds(evalCase);
  const index = diagnoses.findIndex((d) => accepted.has(d.condition_id));
  const status = index >= 0 ? 'ranked' : diagnoses.length < topK ? 'not_scorable' : 'outside_top_k';
  return {
    id: evalCase.id,
    language: evalCase.language,
    expected: evalCase.expected.condition_id,
    status,
    rank: index >= 0 ? index + 1 : null,
    diagnoses,
    unknown: response.unknown_probability,
    findings: Array.isArray(response.findings) ? response.findings.length : 0,
    warnings: Array.isArray(response.warnings) ? response.warnings.map(String) : [],
    timings: response.timings_ms ?? null,
    model: response.model ?? null,
  };
}

/**
 * The conditions that count as the right answer: the expected one and those the source also accepts.
 * @param {import('./lib.js').EvalCase} evalCase
 */
export function acceptedIds(evalCase) {
  return new Set([evalCase.expected.condition_id, ...(evalCase.expected.also_accepted ?? [])]);
}

/**
 * Top-1 and top-3 over every case (a case the base does not cover counts as missed) and over the
 * cases whose answer the base covers (one of the accepted conditions is in `covered`), per language:
 * the benchmark table of a published vignette set.
 * @param {readonly import('./lib.js').EvalCase[]} cases
 * @param {readonly import('./lib.js').CaseOutcome[]} outcomes in the order of `cases`
 * @param {ReadonlySet<string>} covered condition ids the loaded base scores
 */
export function benchmarkFigures(cases, outcomes, covered) {
  /** @type {Record<string, { all: { n: number, top1: number, top3: number }, covered: { n: number, top1: number, top3: number } }>} */
  const out = {};
  for (const language of [...new Set(cases.map((c) => c.language))].sort()) {
    const rows = cases.map((c, i) => ({ c, o: outcomes[i] })).filter(({ c }) => c.language === language);
    const within = rows.filter(({ c }) => [...acceptedIds(c)].some((id) => covered.has(id)));
    const figures = (/** @type {typeof rows} */ set) => ({
      n: set.length,
      top1: set.filter(({ o }) => o?.rank !== null && o?.rank !== undefined && o.rank <= 1).length,
      top3: set.filter(({ o }) => o?.rank !== null && o?.rank !== undefined && o.rank <= 3).length,
    });
    out[language] = { all: figures(rows), covered: figures(within) };
  }
  return out;
}

/**
 * The benchmark table: the engine's top-1/top-3 per language (all cases, covered cases) beside the
 * published anchors.
 * @param {ReturnType<typeof benchmarkFigures>} figures
 * @param {readonly { who: string, top1: number, top3: number, citation: string }[]} anchors
 */
export function formatBenchmark(figures, anchors) {
  const share = (/** @type {number} */ k, /** @type {number} */ n) =>
    n === 0 ? 'n/a' : `${((100 * k) / n).toFixed(0)}% (${k}/${n})`;
  const rows = [['', 'top-1', 'top-3']];
  for (const [language, f] of Object.entries(figures)) {
    rows.push([`engine, ${language}, all cases`, share(f.all.top1, f.all.n), share(f.all.top3, f.all.n)]);
    rows.push([
      `engine, ${language}, cases the base covers`,
      share(f.covered.top1, f.covered.n),
      share(f.covered.top3, f.covered.n),
    ]);
  }
  for (const a of anchors)
    rows.push([a.who, `${(100 * a.top1).toFixed(0)}%`, `${(100 * a.top3).toFixed(0)}%`]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const lines = rows.map((r) =>
    r
      .map((cell, i) => (cell ?? '').padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
  const cites = anchors.map((a) => `  ${a.who}: ${a.citation}`);
  return [...lines, ...(cites.length > 0 ? ['anchors:', ...cites] : [])].join('\n');
}

/** A case whose request failed (transport error or non-200 status). */
/**
 * @param {import('./lib.js').EvalCase} evalCase
 * @param {string} error
 * @returns {import('./lib.js').CaseOutcome}
 */
export function failedOutcome(evalCase, error) {
  return {
    id: evalCase.id,
    language: evalCase.language,
    expected: evalCase.expected.condition_id,
    status: 'error',
    rank: null,
    diagnoses: [],
    unknown: Number.NaN,
    findings: 0,
    warnings: [],
    timings: null,
    model: null,
    error,
  };
}

/**
 * The case's distribution: the returned conditions, "unknown", and (when the list was cut at top_k)
 * the remaining mass lumped as "other", which holds the truth when the truth was not returned.
 * @param {import('./lib.js').CaseOutcome} o
 */
function distribution(o) {
  const entries = o.diagnoses.map((d) => ({ label: d.condition_id, p: d.probability }));
  entries.push({ label: '\u0000unknown', p: o.unknown });
  const residual = 1 - entries.reduce((s, e) => s + e.p, 0);
  if (residual > 1e-6) entries.push({ label: '\u0000other', p: residual });
  return entries;
}

/**
 * Multi-class Brier score over the returned distribution plus unknown (and the lumped rest when
 * the list was cut), mean over cases: sum_k (p_k - o_k)^2, in [0, 2], lower is better. The truth is
 * the expected condition, or "other" when it was not returned.
 * @param {readonly import('./lib.js').CaseOutcome[]} outcomes
 */
export function brierScore(outcomes) {
  if (outcomes.length === 0) return Number.NaN;
  let total = 0;
  for (const o of outcomes) {
    const truth = o.rank === null ? '\u0000other' : o.expected;
    let hit = false;
    for (const { label, p } of distribution(o)) {
      const y = label === truth ? 1 : 0;
      if (y === 1) hit = true;
      total += (p - y) ** 2;
    }
    if (!hit) total += 1; // the truth had no mass at all (not returned, nothing left over)
  }
  return total / outcomes.length;
}

/**
 * Top-label reliability of the top-1 diagnosis: equal-width bins over its probability, (lower,
 * upper] with the first bin including 0.
 * @param {readonly import('./lib.js').CaseOutcome[]} outcomes
 * @param {number} bins
 */
export function reliability(outcomes, bins = 10) {
  if (!Number.isInteger(bins) || bins < 1)
    throw new RangeError(`bins must be a positive integer, not ${bins}`);
  const rows = Array.from({ length: bins }, (_, i) => ({
    lower: i / bins,
    upper: (i + 1) / bins,
    count: 0,
    confidence: 0,
    accuracy: 0,
  }));
  for (const o of outcomes) {
    const top = o.diagnoses[0];
    if (top === undefined) continue;
    const row = rows[Math.min(bins - 1, Math.max(0, Math.ceil(top.probability * bins) - 1))];
    if (row === undefined) continue;
    row.count += 1;
    row.confidence += top.probability;
    row.accuracy += o.rank === 1 ? 1 : 0;
  }
  return rows.map((r) => ({
    ...r,
    confidence: r.count === 0 ? Number.NaN : r.confidence / r.count,
    accuracy: r.count === 0 ? Number.NaN : r.accuracy / r.count,
  }));
}

/**
 * Expected calibration error of the top-1 probability (Guo et al. 2017): sum_b (n_b / n) *
 * |accuracy_b - confidence_b| over equal-width bins; in [0, 1], lower is better.
 * @param {readonly import('./lib.js').CaseOutcome[]} outcomes
 * @param {number} bins
 */
export function expectedCalibrationError(outcomes, bins = 10) {
  const rows = reliability(outcomes, bins);
  const n = rows.reduce((s, r) => s + r.count, 0);
  if (n === 0) return Number.NaN;
  return rows.reduce(
    (s, r) => (r.count === 0 ? s : s + (r.count / n) * Math.abs(r.accuracy - r.confidence)),
    0,
  );
}

/**
 * Share of outcomes whose expected condition is among the k most probable.
 * @param {readonly import('./lib.js').CaseOutcome[]} outcomes
 * @param {number} k
 */
export function topKAccuracy(outcomes, k) {
  if (outcomes.length === 0) return Number.NaN;
  return outcomes.filter((o) => o.rank !== null && o.rank <= k).length / outcomes.length;
}

/**
 * The summary: accuracy and calibration over the cases the loaded base can score (`ranked` and
 * `outside_top_k`), overall and per language; the not-scorable and failed cases counted and named
 * separately, never dropped silently; the model and knowledge-base versions the responses named.
 * @param {readonly import('./lib.js').CaseOutcome[]} outcomes
 * @param {{ bins?: number }} [options]
 */
export function summarize(outcomes, options = {}) {
  const bins = options.bins ?? 10;
  const scored = outcomes.filter((o) => o.status === 'ranked' || o.status === 'outside_top_k');
  const figures = (/** @type {readonly import('./lib.js').CaseOutcome[]} */ set) => ({
    cases: set.length,
    top1: topKAccuracy(set, 1),
    top3: topKAccuracy(set, 3),
    top10: topKAccuracy(set, 10),
    brier: brierScore(set),
    ece: expectedCalibrationError(set, bins),
    meanUnknown: set.length === 0 ? Number.NaN : set.reduce((s, o) => s + o.unknown, 0) / set.length,
  });
  /** @type {Record<string, ReturnType<typeof figures>>} */
  const byLanguage = {};
  for (const language of [...new Set(outcomes.map((o) => o.language))].sort())
    byLanguage[language] = figures(scored.filter((o) => o.language === language));
  const models = new Map();
  for (const o of outcomes) if (o.model !== null) models.set(JSON.stringify(o.model), o.model);
  return {
    total: outcomes.length,
    overall: figures(scored),
    byLanguage,
    reliability: reliability(scored, bins),
    notScorable: outcomes
      .filter((o) => o.status === 'not_scorable')
      .map((o) => ({ id: o.id, expected: o.expected })),
    outsideTopK: scored.filter((o) => o.status === 'outside_top_k').map((o) => o.id),
    failed: outcomes.filter((o) => o.status === 'error').map((o) => ({ id: o.id, error: o.error ?? '' })),
    models: [...models.values()],
  };
}

/** @param {number} x @param {number} [digits] */
const fmt = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
/** @param {number} x */
const pct = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : 'n/a');

/**
 * The per-case table: expected condition, top 3 with probabilities, rank of the expected one.
 * @param {readonly import('./lib.js').CaseOutcome[]} outcomes
 */
export function formatCaseTable(outcomes) {
  const rows = [['case', 'lang', 'expected', 'rank', 'top 3 (probability)', 'unknown']];
  for (const o of outcomes) {
    const rank =
      o.status === 'ranked'
        ? String(o.rank)
        : o.status === 'error'
          ? 'ERROR'
          : o.status === 'not_scorable'
            ? 'not scorable'
            : `>${o.diagnoses.length}`;
    const top3 =
      o.status === 'error'
        ? (o.error ?? '').slice(0, 80)
        : o.diagnoses
            .slice(0, 3)
            .map((d) => `${d.condition_id} ${fmt(d.probability)}`)
            .join(', ');
    rows.push([o.id, o.language, o.expected, rank, top3, o.status === 'error' ? '' : fmt(o.unknown)]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows
    .map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c] ?? 0))).join('  '))
    .join('\n');
}

/** @param {ReturnType<typeof summarize>} s */
export function formatSummary(s) {
  const line = (/** @type {string} */ name, /** @type {ReturnType<typeof summarize>['overall']} */ f) =>
    `${name.padEnd(8)} n=${String(f.cases).padEnd(4)} top-1 ${pct(f.top1).padEnd(6)} top-3 ${pct(f.top3).padEnd(6)} top-10 ${pct(f.top10).padEnd(6)} Brier ${fmt(f.brier)}  ECE ${fmt(f.ece)}  mean unknown ${fmt(f.meanUnknown)}`;
  const out = [
    `cases: ${s.total} (scored ${s.overall.cases}, not scorable in the loaded base ${s.notScorable.length}, failed ${s.failed.length})`,
    line('all', s.overall),
    ...Object.entries(s.byLanguage).map(([lang, f]) => line(lang, f)),
  ];
  if (s.notScorable.length > 0)
    out.push(
      `not scorable (expected condition not in the loaded base): ${s.notScorable.map((n) => `${n.id} [${n.expected}]`).join(', ')}`,
    );
  if (s.outsideTopK.length > 0)
    out.push(`expected condition outside the returned list: ${s.outsideTopK.join(', ')}`);
  if (s.failed.length > 0) out.push(`failed: ${s.failed.map((f) => `${f.id} (${f.error})`).join('; ')}`);
  for (const m of s.models) {
    const kbs = Array.isArray(m.knowledge_bases)
      ? m.knowledge_bases.map((/** @type {any} */ k) => `${k.id}@${k.version}`).join(', ')
      : '?';
    const cal =
      m.calibration === null || m.calibration === undefined
        ? 'none (alpha = 1, uncalibrated)'
        : `alpha=${m.calibration.alpha} (${m.calibration.source})`;
    const ex =
      m.extractor === undefined ? '?' : `rules ${m.extractor.rules}, llm ${m.extractor.llm ?? 'none'}`;
    out.push(
      `model: engine ${m.engine} on ${m.device}; knowledge bases ${kbs}; calibration ${cal}; extractor ${ex}`,
    );
  }
  return out.join('\n');
}
