#!/usr/bin/env node
/**
 * hpo-import: writes a knowledge-base directory from HPO's phenotype.hpoa and hp.obo.
 *
 *   npm run hpo-import -- --hpoa <file> --obo <file> --out <dir>
 *        [--diseases <id,id,…|@file>] [--id <kb id>] [--version <text>]
 *
 * The files come from the model store: `npm run models -- fetch hpo-annotations` and
 * `… fetch hpo-ontology`. The written base is loaded back and validated before the command
 * reports success. Exit 0 on success, 1 with the error, 2 with the usage on a usage error.
 * `main` takes argv and streams so tests drive it directly.
 */
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  formatProblem,
  HpoImportError,
  importHpo,
  loadKnowledgeBase,
  writeKbDocument,
  type HpoImportReport,
} from '@clinicalsuite/reasoning/kb';

export const USAGE = `usage: hpo-import --hpoa <phenotype.hpoa> --obo <hp.obo> --out <dir> [options]

  --hpoa <file>        HPO disease annotations (npm run models -- fetch hpo-annotations)
  --obo <file>         HPO ontology (npm run models -- fetch hpo-ontology)
  --out <dir>          the knowledge-base directory to write (kb.json + conditions/features/links.csv)
  --diseases <list>    keep only these diseases: ids separated by commas (OMIM:143100,ORPHA:558),
                       or @<file> with one id a line (# starts a comment)
  --id <id>            the base's id (default hpo-<release>)
  --version <text>     the base's version (default the release date)
  -h, --help           this text
`;

export interface CliStreams {
  readonly stdout: { write(s: string): unknown };
  readonly stderr: { write(s: string): unknown };
}

class UsageError extends Error {}

async function diseaseFilter(spec: string): Promise<Set<string>> {
  const text = spec.startsWith('@') ? await readFile(spec.slice(1), 'utf8') : spec.replaceAll(',', '\n');
  const ids = text
    .split(/\r?\n/)
    .map((l) => (l.includes('#') ? l.slice(0, l.indexOf('#')) : l).trim())
    .filter((l) => l !== '');
  if (ids.length === 0) throw new UsageError('--diseases names no disease');
  return new Set(ids);
}

function summary(r: HpoImportReport, out: string): string {
  const lines = [
    `wrote ${out}: HPO ${r.annotationVersion ?? '?'} (ontology ${r.ontologyVersion ?? '?'})`,
    `  ${r.diseases} diseases, ${r.features} features, ${r.links} links from ${r.rows} annotation rows`,
    `  links: ${r.linksBy.fraction} fractions, ${r.linksBy.percentage} percentages, ${r.linksBy.frequencyTerm} frequency terms, ` +
      `${r.linksBy.noFrequency} without frequency (default), ${r.linksBy.negated} NOT`,
    `  ${r.pooled} links pooled from several rows, ${r.clamped} clamped into (0, 1)`,
    `  terms: ${r.terms.viaAltId} rows via alt_id, ${r.terms.viaReplacedBy} via replaced_by, ${r.terms.dropped.length} obsolete/unknown terms dropped`,
  ];
  const skipped = Object.entries(r.rowsByAspect)
    .filter(([aspect]) => aspect !== 'P')
    .map(([aspect, n]) => `${aspect} ${n}`);
  if (skipped.length > 0) lines.push(`  rows of other aspects, not links: ${skipped.join(', ')}`);
  if (r.terms.dropped.length > 0) {
    lines.push(`  dropped terms: ${r.terms.dropped.map((d) => `${d.id} (${d.reason})`).join(', ')}`);
  }
  if (r.negatedOverridden > 0)
    lines.push(`  ${r.negatedOverridden} NOT rows overridden by rows annotating the term`);
  const unparsed = r.unparsedFrequencies[0];
  if (unparsed !== undefined) {
    lines.push(
      `  ${r.unparsedFrequencies.length} unreadable frequencies (treated as none), first on line ${unparsed.line}`,
    );
  }
  if (r.missingDiseases.length > 0) lines.push(`  not in the annotations: ${r.missingDiseases.join(', ')}`);
  if (r.withoutPhenotypes.length > 0) {
    lines.push(`  without phenotype annotations, left out: ${r.withoutPhenotypes.join(', ')}`);
  }
  const problem = r.fileProblems[0];
  if (problem !== undefined) {
    lines.push(
      `  ${r.fileProblems.length} unreadable annotation lines, first: line ${problem.line}: ${problem.message}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export async function main(argv: readonly string[], io: CliStreams): Promise<number> {
  try {
    const { values, positionals } = (() => {
      try {
        return parseArgs({
          args: [...argv],
          allowPositionals: true,
          options: {
            hpoa: { type: 'string' },
            obo: { type: 'string' },
            out: { type: 'string' },
            diseases: { type: 'string' },
            id: { type: 'string' },
            version: { type: 'string' },
            help: { type: 'boolean', short: 'h' },
          },
        });
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
    })();
    if (values.help === true) {
      io.stdout.write(USAGE);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${String(positionals[0])}"`);
    const { hpoa, obo, out } = values;
    if (hpoa === undefined || obo === undefined || out === undefined) {
      throw new UsageError('--hpoa, --obo and --out are required');
    }
    const diseases = values.diseases === undefined ? undefined : await diseaseFilter(values.diseases);
    const [hpoaText, oboText] = await Promise.all([readFile(hpoa, 'utf8'), readFile(obo, 'utf8')]);
    const { document, report } = importHpo(hpoaText, oboText, {
      ...(diseases === undefined ? {} : { diseases }),
      ...(values.id === undefined ? {} : { id: values.id }),
      ...(values.version === undefined ? {} : { version: values.version }),
    });
    if (document.conditions.length === 0) {
      io.stderr.write('hpo-import: no disease left to write (check --diseases)\n');
      return 1;
    }
    await writeKbDocument(out, document);
    const check = await loadKnowledgeBase(out);
    if (!check.ok) {
      io.stderr.write(
        `hpo-import: the written base does not validate:\n${check.problems.map(formatProblem).join('\n')}\n`,
      );
      return 1;
    }
    io.stdout.write(summary(report, out));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`hpo-import: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    const message = err instanceof HpoImportError || err instanceof Error ? err.message : String(err);
    io.stderr.write(`hpo-import: ${message}\n`);
    return 1;
  }
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(resolve(entry))).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
}
