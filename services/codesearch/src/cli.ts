#!/usr/bin/env node
/**
 * `node services/codesearch/dist/cli.js import --type ICPC2 --file icpc2.csv [--format csv|jsonl|
 * icd10cm-xml|icd10pcs-sqlite] [--data-dir DIR] [--source TEXT] [--license TEXT]`: validates the
 * whole file and replaces the type's set in the data dir atomically (a bad file changes nothing);
 * a running service picks the new set up within CODESEARCH_RELOAD_POLL_MS.
 * `… list [--data-dir DIR]`: the stored sets.
 */
import { parseArgs } from 'node:util';
import { CodeStore, damagedSetMessage } from './adapters/code-store.js';
import { IMPORT_FORMATS, importCodeSet, type ImportFormat } from './adapters/importer.js';
import { CODE_TYPES, CodeTypeSchema } from './schemas/code-record.js';

const USAGE = `usage:
  codesearch import --type <${CODE_TYPES.join('|')}> --file <path> [--format <${IMPORT_FORMATS.join('|')}>]
                    [--data-dir <dir>] [--source <text>] [--license <text>]
  codesearch list [--data-dir <dir>]
The data dir defaults to $DATA_DIR, else ./data (the service's default).`;

function out(text: string): void {
  process.stdout.write(`${text}\n`);
}

function fail(text: string, code: number): never {
  process.stderr.write(`${text}\n`);
  process.exit(code);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  let values: Record<string, string | undefined>;
  try {
    values = parseArgs({
      args: rest,
      options: {
        type: { type: 'string' },
        file: { type: 'string' },
        format: { type: 'string' },
        'data-dir': { type: 'string' },
        source: { type: 'string' },
        license: { type: 'string' },
      },
      strict: true,
    }).values;
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`, 2);
  }
  const store = new CodeStore(values['data-dir'] ?? (process.env['DATA_DIR'] || 'data'));
  if (command === 'list') {
    for (const type of CODE_TYPES) {
      const meta = await store.readMeta(type).catch((err: unknown) => err as Error);
      out(
        meta === null
          ? `${type}\t(none)`
          : meta instanceof Error
            ? `${type}\t(damaged) ${damagedSetMessage({ type, file: store.fileOf(type), problem: meta.message })}`
            : `${type}\t${meta.count} codes\t${meta.source}\t${meta.format}\t${meta.imported_at}`,
      );
    }
    return;
  }
  if (command !== 'import') fail(USAGE, 2);
  const type = CodeTypeSchema.safeParse(values['type']);
  if (!type.success) fail(`--type must be one of ${CODE_TYPES.join(', ')}\n${USAGE}`, 2);
  const file = values['file'];
  if (file === undefined) fail(`--file is required\n${USAGE}`, 2);
  const format = values['format'];
  if (format !== undefined && !(IMPORT_FORMATS as readonly string[]).includes(format))
    fail(`--format must be one of ${IMPORT_FORMATS.join(', ')}`, 2);
  const result = await importCodeSet(store, {
    type: type.data,
    file,
    ...(format === undefined ? {} : { format: format as ImportFormat }),
    ...(values['source'] === undefined ? {} : { source: values['source'] }),
    ...(values['license'] === undefined ? {} : { license: values['license'] }),
  });
  if (!result.ok) {
    const lines = result.errors.map((e) =>
      e.line > 0 ? `  ${file}:${e.line}: ${e.message}` : `  ${e.message}`,
    );
    fail(
      `import refused, nothing was changed (${result.errors.length} problem${result.errors.length === 1 ? '' : 's'}):\n${lines.join('\n')}`,
      1,
    );
  }
  for (const w of result.warnings) process.stderr.write(`warning: ${file}:${w.line}: ${w.message}\n`);
  out(
    `imported ${result.meta.count} ${result.meta.type} codes from ${result.meta.source} into ${store.fileOf(result.meta.type)}`,
  );
}

main(process.argv.slice(2)).catch((err: unknown) => {
  fail(`import failed: ${err instanceof Error ? err.message : String(err)}`, 1);
});
