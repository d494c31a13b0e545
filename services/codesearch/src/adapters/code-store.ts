import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CODE_TYPES,
  CodeRecordSchema,
  SetMetaSchema,
  type CodeRecord,
  type CodeType,
  type SetMeta,
} from '../schemas/code-record.js';

/**
 * The code sets a service serves, one file per type under `<DATA_DIR>/codesearch/sets/<TYPE>.jsonl`:
 * a `{"meta": …}` line (source, licence, sha256 of what was imported, when) then one record per
 * line. A set is replaced whole: written to a temporary file in the same folder, flushed, then
 * renamed over the old one, so a reader sees the old set or the new one, never half of either.
 */

export interface StoredSet {
  readonly meta: SetMeta;
  readonly records: CodeRecord[];
}

/** A stored set file that exists but cannot be read or parsed: not served, and left as it is. */
export interface DamagedSet {
  readonly type: CodeType;
  readonly file: string;
  readonly problem: string;
}

/** What is wrong with a damaged set file, and what to do about it. */
export function damagedSetMessage(d: DamagedSet): string {
  return (
    `The stored ${d.type} set ${d.file} cannot be read (${d.problem}): ${d.type} is not served, and the ` +
    `file is left as it is. Import the set again (node services/codesearch/dist/cli.js import --type ` +
    `${d.type} --file <your file>), or, for a built-in set, remove the file and restart to import it afresh.`
  );
}

export class CodeStore {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'codesearch', 'sets');
  }

  fileOf(type: CodeType): string {
    return join(this.dir, `${type}.jsonl`);
  }

  async write(meta: Omit<SetMeta, 'count'>, records: readonly CodeRecord[]): Promise<SetMeta> {
    await mkdir(this.dir, { recursive: true });
    const full: SetMeta = { ...meta, count: records.length };
    const target = this.fileOf(meta.type);
    const tmp = join(this.dir, `.${meta.type}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const handle = await open(tmp, 'w', 0o644);
    try {
      const lines = [JSON.stringify({ meta: full }), ...records.map((r) => JSON.stringify(r))];
      // Written in chunks so a large set does not build one huge string.
      for (let i = 0; i < lines.length; i += 5000)
        await handle.write(`${lines.slice(i, i + 5000).join('\n')}\n`);
      await handle.sync();
    } catch (err) {
      await handle.close();
      await rm(tmp, { force: true });
      throw err;
    }
    await handle.close();
    await rename(tmp, target);
    const dir = await open(this.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    return full;
  }

  /**
   * The header of the stored set of `type`; null only when there is no such file. A file that
   * cannot be read, or whose header is not a valid `{"meta": …}` line, throws: it is not "no set".
   */
  async readMeta(type: CodeType): Promise<SetMeta | null> {
    const text = await readFile(this.fileOf(type), 'utf8').catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    });
    if (text === null) return null;
    const end = text.indexOf('\n');
    return parseMeta(end === -1 ? text : text.slice(0, end), type);
  }

  /** Every stored set; a file that cannot be read or parsed is reported by type, not served. */
  async readAll(): Promise<{ sets: StoredSet[]; damaged: DamagedSet[] }> {
    const sets: StoredSet[] = [];
    const damaged: DamagedSet[] = [];
    for (const type of CODE_TYPES) {
      const file = this.fileOf(type);
      try {
        sets.push(parseStoredSet(await readFile(file, 'utf8'), type));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        damaged.push({ type, file, problem: (err as Error).message });
      }
    }
    return { sets, damaged };
  }

  /** Changes whenever a set file is replaced (for reloading). */
  async signature(): Promise<string> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const parts: string[] = [];
    for (const name of names.filter((n) => n.endsWith('.jsonl')).sort()) {
      const s = await stat(join(this.dir, name)).catch(() => null);
      if (s !== null) parts.push(`${name}:${s.size}:${s.mtimeMs}:${s.ino}`);
    }
    return parts.join('|');
  }
}

function parseMeta(line: string, type: CodeType): SetMeta {
  let header: unknown;
  try {
    header = JSON.parse(line);
  } catch (err) {
    throw new Error(`line 1 (the header) is not JSON: ${(err as Error).message}`);
  }
  const parsed = SetMetaSchema.safeParse((header as { meta?: unknown } | null)?.meta);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue === undefined || issue.path.length === 0 ? '' : `meta.${issue.path.join('.')}: `;
    throw new Error(`line 1 (the header) is not a set header: ${at}${issue?.message ?? 'invalid'}`);
  }
  if (parsed.data.type !== type) throw new Error(`holds type ${parsed.data.type}`);
  return parsed.data;
}

function parseStoredSet(text: string, type: CodeType): StoredSet {
  const lines = text.split('\n');
  const meta = parseMeta(lines[0] ?? '', type);
  const records: CodeRecord[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line === '') continue;
    const parsed = CodeRecordSchema.safeParse(JSON.parse(line));
    if (!parsed.success) throw new Error(`line ${i + 1}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    records.push(parsed.data);
  }
  if (records.length !== meta.count)
    throw new Error(`holds ${records.length} codes, its header says ${meta.count}`);
  return { meta, records };
}

export async function sha256File(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}
