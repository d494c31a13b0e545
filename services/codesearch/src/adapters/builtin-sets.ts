import { access } from 'node:fs/promises';
import type { Logger } from '@clinicalsuite/kit';
import type { BuiltinSet } from '../config.js';
import type { SetMeta } from '../schemas/code-record.js';
import { damagedSetMessage, sha256File, type CodeStore } from './code-store.js';
import { importCodeSet } from './importer.js';

/**
 * The code sets fetched through the model store (ICD-10-CM, ICD-10-PCS) are imported into the
 * data dir at start when the store has no set of that type (no file), or holds an older import of
 * the same file. A set the user imported from their own file is never replaced; nor is a stored
 * file whose header cannot be read: it may be the user's, so it is left as it is, with an error
 * that names it and what to do (the catalog reports it as damaged and does not serve it).
 */
export async function importBuiltinSets(
  store: CodeStore,
  sets: readonly BuiltinSet[],
  logger: Logger,
): Promise<string[]> {
  const problems: string[] = [];
  for (const set of sets) {
    const present = await access(set.path).then(
      () => true,
      () => false,
    );
    if (!present) continue;
    const source = `model store: ${set.id}`;
    let meta: SetMeta | null;
    try {
      meta = await store.readMeta(set.type);
    } catch (err) {
      const damaged = { type: set.type, file: store.fileOf(set.type), problem: (err as Error).message };
      const problem = `${damagedSetMessage(damaged)} The built-in ${set.id} was not imported over it.`;
      problems.push(problem);
      logger.error({ type: set.type, path: damaged.file }, problem);
      continue;
    }
    if (meta !== null && meta.source !== source) continue;
    if (meta !== null && meta.sha256 === (await sha256File(set.path))) continue;
    const result = await importCodeSet(store, {
      type: set.type,
      file: set.path,
      format: set.format,
      source,
      license: set.license,
    });
    if (result.ok)
      logger.info({ type: set.type, codes: result.meta.count, source }, 'built-in code set imported');
    else {
      const first = result.errors[0];
      const problem = `${set.path} could not be imported as ${set.type}: line ${first?.line ?? 0}: ${first?.message ?? '?'}`;
      problems.push(problem);
      logger.error({ type: set.type, path: set.path }, problem);
    }
  }
  return problems;
}
