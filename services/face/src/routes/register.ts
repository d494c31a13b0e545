import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  HttpError,
  defineRoute,
  type AnyRoute,
  type UploadedFile,
} from '@clinicalsuite/kit';
import { ms, ok, plural } from '../domain/envelope.js';
import { locationOf } from '../domain/geometry.js';
import { RegisterBatchResponseSchema, RegisterFormSchema, RegisterResponseSchema } from '../schemas/face.js';
import {
  analyzeImage,
  analyzeUpload,
  decodeUpload,
  deviceOf,
  imageUploads,
  requireUploads,
  type FaceRuntime,
} from './runtime.js';

/**
 * Registration stores the embedding of each accepted image under the person (one transaction), so
 * a person registered from several photos keeps each of them and matches on the closest; calling
 * register again for a known name adds photos to that person.
 */

async function store(
  rt: FaceRuntime,
  form: { person_name: string; email?: string | undefined; pid?: string | undefined },
  embeddings: Float32Array[],
) {
  const models = rt.host.require();
  const record = await rt.registry.register({
    name: form.person_name,
    email: form.email ?? null,
    pid: form.pid ?? null,
    model: models.engine.modelId,
    embeddings,
    at: new Date().toISOString(),
  });
  // Read back through the mirror, in order with deletes and other replicas' changes of the person.
  await rt.mirror.changed(record.id);
  return record;
}

export function registerPersonRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/register_person',
    summary: 'Register a person from an image with exactly one clear face',
    tags: ['registry'],
    body: RegisterFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: imageUploads(rt, 'file', 1),
    response: RegisterResponseSchema,
    // The upload is checked (400) before readiness (503): see the kit's route.ts.
    requiresReady: 'in-handler',
    handler: async ({ body, req, signal, requireReady }) => {
      const file = requireUploads(req, 'file', 'image')[0] as UploadedFile;
      const started = performance.now();
      const decoded = await decodeUpload(rt, file);
      requireReady();
      const { image, faces } = await analyzeImage(rt, decoded, signal);
      const [face] = faces;
      if (face === undefined) {
        throw new BadRequestError(`No face found in ${file.originalname}; send a photo with one clear face`, {
          code: 'no_face',
        });
      }
      if (faces.length > 1) {
        throw new BadRequestError(
          `${plural(faces.length, 'face')} found in ${file.originalname}; register_person needs exactly one face`,
          { code: 'multiple_faces' },
        );
      }
      signal.throwIfAborted();
      const record = await store(rt, body, [face.embedding]);
      const elapsed = ms(performance.now() - started);
      rt.stats.record(elapsed);
      return ok(`Person '${record.name}' registered successfully`, {
        person_name: record.name,
        encoding_dimensions: record.encodingDimensions,
        faces_detected: faces.length,
        face_location: locationOf(face.detection.box, image.width, image.height),
        processing_time_ms: elapsed,
        device: deviceOf(rt),
      });
    },
  });
}

export function registerBatchRoute(rt: FaceRuntime): AnyRoute {
  const max = rt.config.MAX_REGISTER_BATCH;
  return defineRoute({
    method: 'post',
    path: '/register_batch',
    summary: `Register a person from several images (at most ${String(max)}); only images with exactly one face are used`,
    description:
      'Each image with exactly one face adds its embedding to the person (all kept; matching uses the closest). ' +
      'Other images are skipped, and `skipped` says why. When no image qualifies, nothing is stored (400).',
    tags: ['registry'],
    body: RegisterFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: imageUploads(rt, 'files', max),
    response: RegisterBatchResponseSchema,
    requiresReady: 'in-handler',
    handler: async ({ body, req, signal, requireReady }) => {
      const files = requireUploads(req, 'files');
      requireReady();
      const started = performance.now();
      const embeddings: Float32Array[] = [];
      const skipped: { filename: string; reason: string }[] = [];
      for (const file of files) {
        signal.throwIfAborted();
        try {
          const { faces } = await analyzeUpload(rt, file, signal);
          if (faces.length === 1 && faces[0] !== undefined) embeddings.push(faces[0].embedding);
          else
            skipped.push({
              filename: file.originalname,
              reason: faces.length === 0 ? 'no face found' : `${plural(faces.length, 'face')} found`,
            });
        } catch (error) {
          if (!(error instanceof HttpError) || error.status >= 500) throw error;
          skipped.push({ filename: file.originalname, reason: error.message });
        }
      }
      if (embeddings.length === 0) {
        throw new BadRequestError(
          `None of the ${plural(files.length, 'image')} has exactly one face; nothing was registered for '${body.person_name}'`,
          { code: 'no_usable_image' },
        );
      }
      signal.throwIfAborted();
      const record = await store(rt, body, embeddings);
      const elapsed = ms(performance.now() - started);
      rt.stats.record(elapsed);
      return ok(
        `Processed ${String(embeddings.length)}/${String(files.length)} images for '${record.name}'`,
        {
          person_name: record.name,
          total_images: files.length,
          processed_images: embeddings.length,
          skipped_images: skipped.length,
          average_encoding_size: record.encodingDimensions,
          skipped,
          processing_time_ms: elapsed,
          device: deviceOf(rt),
        },
      );
    },
  });
}
