import { z } from 'zod';

/**
 * One code of a code set, as stored and as imported (CSV columns or JSONL fields):
 * `code, type, title_vi, title_en, synonyms, parent`. At least one title is required.
 */

export const CODE_TYPES = ['ICD10', 'ICPC2', 'CPT', 'SERVICE', 'PROCEDURE'] as const;
export const CodeTypeSchema = z.enum(CODE_TYPES);
export type CodeType = z.infer<typeof CodeTypeSchema>;

const text = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .refine((s) => !Array.from(s).some((c) => c.charCodeAt(0) < 0x20 && c !== '\t' && c !== '\n'), {
      message: 'must not hold control characters',
    });

const optionalText = (max: number) =>
  z
    .union([text(max), z.null()])
    .optional()
    .transform((s) => (s === undefined || s === null || s === '' ? null : s));

export const CodeSchema = z
  .string()
  .trim()
  .min(1, 'code must not be empty')
  .max(32)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._\-/]*$/, 'code: letters, digits and . _ - / only');

export const CodeRecordSchema = z
  .object({
    code: CodeSchema,
    type: CodeTypeSchema,
    title_vi: optionalText(1000),
    title_en: optionalText(1000),
    synonyms: z
      .union([z.array(text(1000)), z.string(), z.null()])
      .optional()
      .transform((v) => {
        const list = v === undefined || v === null ? [] : typeof v === 'string' ? v.split('|') : v;
        return [...new Set(list.map((s) => s.trim()).filter((s) => s !== ''))];
      }),
    parent: z
      .union([CodeSchema, z.literal(''), z.null()])
      .optional()
      .transform((p) => (p === undefined || p === null || p === '' ? null : p)),
  })
  .refine((r) => r.title_vi !== null || r.title_en !== null, {
    message: 'title_vi or title_en is required',
    path: ['title_en'],
  });

export type CodeRecord = z.output<typeof CodeRecordSchema>;

/** The header line of a stored set: where it came from. */
export const SetMetaSchema = z.object({
  type: CodeTypeSchema,
  count: z.number().int().nonnegative(),
  source: z.string(),
  format: z.string(),
  license: z.string().nullable(),
  sha256: z.string(),
  imported_at: z.string(),
});
export type SetMeta = z.infer<typeof SetMetaSchema>;

/** Codes compare without dots, spaces or case: `e11.9` finds `E11.9`. */
export function normalizeCode(code: string): string {
  return code.replace(/[.\s]/g, '').toUpperCase();
}
