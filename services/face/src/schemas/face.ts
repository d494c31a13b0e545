import { GpuSummarySchema } from '@clinicalsuite/kit/gpu';
import { blankAsAbsent, formOptional } from '@clinicalsuite/kit';
import { z } from 'zod';

/** Request and response bodies of the face service (the spec's fields, in its envelope). */

/**
 * Form fields arrive as strings. A blank one (`confidence_threshold=`, as an HTML form sends an
 * empty input) means the field was not given, so its default applies; it is never read as 0 the
 * way `Number('')` would. A number must be written in decimal (`0.45`, `5`, `1e-1`): anything
 * else (`abc`, `0x1`) fails with a 422 naming the field.
 */
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A numeric form field: blank is absent, decimal text is its number, anything else is refused. */
export function formNumber<T extends z.ZodType<number | undefined>>(schema: T) {
  return z.preprocess((value) => {
    const v = blankAsAbsent(value);
    return typeof v === 'string' && DECIMAL.test(v.trim()) ? Number(v.trim()) : v;
  }, schema);
}

/** zod's options for a form number: a value that is not one is refused naming the field. */
export const mustBeNumber = (field: string) => ({
  error: (issue: { code: string }) =>
    issue.code === 'invalid_type' ? `${field} must be a number` : undefined,
});

export const ConfidenceThresholdSchema = formNumber(
  z
    .number(mustBeNumber('confidence_threshold'))
    .min(0)
    .max(1)
    .default(0.4)
    .describe('Minimum confidence (cosine similarity clamped to 0..1) for a face to count as recognized'),
);

/** `.` and `..` are path segments every HTTP client resolves: such a person could never be deleted. */
const DOTS_ONLY = /^\.+$/;

export const PersonNameSchema = z
  .string()
  .trim()
  .min(1, 'person_name must not be empty')
  .max(200)
  .refine(
    (s) => !Array.from(s).some((c) => c.charCodeAt(0) < 0x20 || c === '/' || c === '\\'),
    'person_name must not hold control characters or slashes',
  )
  .refine(
    (s) => !DOTS_ONLY.test(s),
    'person_name must not consist of dots only (`.` and `..` cannot be addressed in /delete_person/{name})',
  );

export const RecognizeFormSchema = z.object({ confidence_threshold: ConfidenceThresholdSchema });

export const RegisterFormSchema = z.object({
  person_name: PersonNameSchema,
  email: formOptional(z.email().max(320).optional()),
  pid: formOptional(z.string().trim().min(1).max(200).optional()),
});

export const FaceLocationSchema = z.object({
  top: z.number().int(),
  right: z.number().int(),
  bottom: z.number().int(),
  left: z.number().int(),
});

export const RecognizedFaceSchema = z.object({
  location: FaceLocationSchema,
  recognized: z.boolean(),
  person_name: z.string().describe('The matched person, or "Unknown"'),
  confidence: z.number().describe('Cosine similarity of the best match, clamped to 0..1'),
  distance: z.number().describe('1 - cosine similarity of the best match (0..2)'),
  detection_score: z.number().describe('The detector’s score for this face (0..1)'),
});

const envelope = <T extends z.ZodType>(data: T) =>
  z.object({ success: z.literal(true), message: z.string(), data });

export const RecognizeDataSchema = z.object({
  filename: z.string(),
  faces_detected: z.number().int(),
  faces: z.array(RecognizedFaceSchema),
  processing_time_ms: z.number(),
  device: z.string(),
});
export const RecognizeResponseSchema = envelope(RecognizeDataSchema);

export const RegisterResponseSchema = envelope(
  z.object({
    person_name: z.string(),
    encoding_dimensions: z.number().int(),
    faces_detected: z.number().int(),
    face_location: FaceLocationSchema,
    processing_time_ms: z.number(),
    device: z.string(),
  }),
);

export const RegisterBatchResponseSchema = envelope(
  z.object({
    person_name: z.string(),
    total_images: z.number().int(),
    processed_images: z.number().int(),
    skipped_images: z.number().int(),
    average_encoding_size: z.number().int().describe('Dimension of the stored embeddings'),
    skipped: z
      .array(z.object({ filename: z.string(), reason: z.string() }))
      .describe('Why each skipped image was skipped'),
    processing_time_ms: z.number(),
    device: z.string(),
  }),
);

export const RecognizeBatchResponseSchema = envelope(
  z.object({
    total_images: z.number().int(),
    results: z.array(
      z.union([
        RecognizeDataSchema.omit({ device: true }),
        z.object({ filename: z.string(), error: z.string() }),
      ]),
    ),
    processing_time_ms: z.number(),
    device: z.string(),
  }),
);

export const PersonSchema = z.object({
  name: z.string(),
  email: z.string().nullable(),
  pid: z.string().nullable(),
  encoding_dimensions: z.number().int(),
  embeddings: z.number().int().describe('Face embeddings stored for the person'),
  created_at: z.string(),
  updated_at: z.string(),
});

export const ListPersonsResponseSchema = envelope(
  z.object({ persons: z.array(PersonSchema), total_count: z.number().int() }),
);

export const DeleteResponseSchema = z.object({ success: z.literal(true), message: z.string() });

export const RootResponseSchema = envelope(
  z.object({
    version: z.string(),
    device: z.string(),
    features: z.array(z.string()),
    endpoints: z.record(z.string(), z.string()),
  }),
);

export const HealthResponseSchema = z.object({
  success: z.boolean(),
  message: z.string(),
  data: z.object({
    /** `degraded`: models loaded and the database answers, but registry changes are not heard (503). */
    status: z.enum(['healthy', 'degraded', 'unhealthy']),
    database: z.enum(['connected', 'disconnected']),
    gpu: z.enum(['available', 'unavailable']),
    device: z.string(),
    model_loaded: z.boolean(),
    uptime_seconds: z.number().int(),
    active_requests: z.number().int(),
    reason: z.string().optional(),
  }),
});

export const StatusResponseSchema = envelope(
  z.object({
    registered_persons: z.number().int(),
    device: z.string(),
    active_requests: z.number().int(),
    average_processing_time_ms: z.number(),
    uptime_seconds: z.number().int(),
    concurrent_limit: z.number().int(),
  }),
);

export const GpuStatusResponseSchema = envelope(GpuSummarySchema);
