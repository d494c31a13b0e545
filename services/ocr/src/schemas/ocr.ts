import { GpuSummarySchema } from '@clinicalsuite/kit/gpu';
import { z } from 'zod';
import { LANGUAGES, type Language } from '../domain/language.js';

/** Request and response bodies of the OCR service; the OpenAPI document is generated from these. */

const formBool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], 'must be true or false')
    .optional()
    .transform((v) => (v === undefined ? fallback : ['true', '1', 'yes', 'on'].includes(v)));

const formInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, `must be >= ${String(min)}`)
        .max(max, `must be <= ${String(max)}`),
    )
    .optional();

export interface FormDefaults {
  readonly language: Language;
  readonly dpi: number;
  readonly maxDpi: number;
}

/** The multipart form's text fields (the file comes in the part named `file`). */
export function ocrFormSchema(defaults: FormDefaults) {
  return z.object({
    file: z.unknown().optional().meta({
      type: 'string',
      format: 'binary',
      description: 'The image (JPEG, PNG, WebP, TIFF) or PDF, as a multipart file part. Required.',
    }),
    language: z
      .enum(LANGUAGES)
      .default(defaults.language)
      .describe(
        '`vi`, `en` or `vi+en` (both models at once: Vietnamese notes carry English drug names and terms)',
      ),
    auto_rotate: formBool(true).describe(
      'Detect pages turned 90/180/270° (tesseract OSD) when the upright read looks wrong, and turn them',
    ),
    deskew: formBool(true).describe('Measure small skew (up to ±15°) and straighten the page first'),
    first_page: formInt(1, 100_000).describe(
      'PDF or multi-page TIFF: first page to read (1-based; default 1)',
    ),
    last_page: formInt(1, 100_000).describe(
      'PDF or multi-page TIFF: last page to read (default: the last, within MAX_PAGES)',
    ),
    dpi: formInt(72, defaults.maxDpi).describe(
      `PDF: resolution pages are rendered at (default ${String(defaults.dpi)})`,
    ),
  });
}
export type OcrForm = z.output<ReturnType<typeof ocrFormSchema>>;

export const BoxSchema = z
  .object({
    x: z.number().int(),
    y: z.number().int(),
    width: z.number().int(),
    height: z.number().int(),
  })
  .describe('Pixels on the page as uploaded (EXIF orientation applied; PDF pages as rendered at `dpi`)');

export const LineSchema = z.object({
  text: z.string(),
  confidence: z.number().min(0).max(1).describe("tesseract's word confidences, weighted by characters, 0..1"),
  box: BoxSchema,
});

export const PageSchema = z.object({
  page: z.number().int().describe('1-based page number in the document'),
  width: z.number().int(),
  height: z.number().int(),
  rotation_applied: z
    .union([z.literal(0), z.literal(90), z.literal(180), z.literal(270)])
    .describe('Degrees the page was turned clockwise to read it'),
  orientation_confidence: z
    .number()
    .nullable()
    .describe("tesseract OSD's confidence when it was asked (null: the upright read was good)"),
  skew_degrees: z.number().describe('Skew measured and straightened (clockwise, degrees; 0 when none)'),
  text: z.string(),
  mean_confidence: z.number().min(0).max(1).nullable().describe('null when the page has no text'),
  lines: z.array(LineSchema),
});

export const OcrResponseSchema = z.object({
  text: z.string().describe('Lines joined by newlines, pages by a blank line'),
  language: z.enum(LANGUAGES),
  mean_confidence: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('Over every line, weighted by characters, 0..1; null when no text was found'),
  pages: z.array(PageSchema),
  page_count: z.number().int().describe('Pages in the document (PDF/TIFF), of which `pages` were read'),
  format: z.enum(['jpeg', 'png', 'webp', 'tiff', 'pdf']),
  processing_time_ms: z.number(),
  engine: z.object({
    name: z.literal('tesseract'),
    version: z.string(),
    languages: z.string().describe('tesseract models used, e.g. vie+eng'),
  }),
});
export type OcrResponse = z.infer<typeof OcrResponseSchema>;

export const RootSchema = z.object({
  service: z.literal('ocr'),
  version: z.string(),
  port: z.number().int(),
  status: z.enum(['ready', 'not_ready']),
  reason: z.string().optional(),
  docs: z.literal('/docs'),
  endpoints: z.record(z.string(), z.string()),
});

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('ocr'),
  engine: z.string().describe('tesseract and its version, or why it is not usable'),
  reason: z.string().optional().describe('Why not ready, when not'),
});

export const StatusSchema = z.object({
  service: z.literal('ocr'),
  version: z.string(),
  status: z.enum(['ready', 'not_ready']),
  reason: z.string().nullable(),
  engine: z.object({
    name: z.literal('tesseract'),
    version: z.string().nullable(),
    languages: z.array(z.string()).describe('Installed tesseract models'),
    orientation_detection: z.boolean().describe('osd.traineddata installed'),
    pdf: z.boolean().describe('poppler-utils found'),
  }),
  default_language: z.enum(LANGUAGES),
  limits: z.object({
    max_file_bytes: z.number().int(),
    max_image_pixels: z.number().int(),
    max_pages: z.number().int(),
    pdf_dpi: z.number().int(),
    pdf_max_dpi: z.number().int(),
    process_timeout_ms: z.number().int(),
  }),
  slots: z.object({
    total: z.number().int(),
    in_use: z.number().int(),
    waiting: z.number().int(),
    queue_capacity: z.number().int(),
  }),
  engine_processes: z.number().int().describe('tesseract/poppler processes running now'),
  pages_processed: z.number().int(),
  average_page_ms: z.number(),
  uptime_seconds: z.number(),
  gpu: GpuSummarySchema,
});
