import { performance } from 'node:perf_hooks';
import { HttpError, defineRoute, type AnyRoute, type UploadedFile } from '@clinicalsuite/kit';
import { ms, ok, plural } from '../domain/envelope.js';
import { locationOf } from '../domain/geometry.js';
import type { FaceMatch } from '../domain/people.js';
import {
  RecognizeBatchResponseSchema,
  RecognizeFormSchema,
  RecognizeResponseSchema,
} from '../schemas/face.js';
import type { DecodedImage } from '../adapters/image.js';
import {
  analyzeImage,
  decodeUpload,
  deviceOf,
  imageUploads,
  requireUploads,
  type FaceRuntime,
} from './runtime.js';

/** One decoded image's faces matched against the registry (`started`: when its decoding began). */
async function recognizeOne(
  rt: FaceRuntime,
  file: UploadedFile,
  decoded: DecodedImage,
  threshold: number,
  signal: AbortSignal,
  started: number,
) {
  const { image, faces } = await analyzeImage(rt, decoded, signal);
  const m0 = performance.now();
  const people = rt.host.require().people;
  const matches = await people.match(
    faces.map((f) => f.embedding),
    threshold,
  );
  rt.metrics.stage.observe({ stage: 'match' }, (performance.now() - m0) / 1000);
  const results = faces.map((face, i) => {
    const match = matches[i] as FaceMatch;
    rt.metrics.recognitions.inc({ result: match.recognized ? 'recognized' : 'unknown' });
    return {
      location: locationOf(face.detection.box, image.width, image.height),
      recognized: match.recognized,
      person_name: match.personName,
      confidence: match.confidence,
      distance: match.distance,
      detection_score: Math.round(face.detection.score * 10_000) / 10_000,
    };
  });
  return {
    filename: file.originalname,
    faces_detected: faces.length,
    faces: results,
    processing_time_ms: ms(performance.now() - started),
  };
}

export function recognizeFacesRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/recognize_faces',
    summary: 'Find every face in an image and match each against the registered persons',
    tags: ['recognition'],
    body: RecognizeFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: imageUploads(rt, 'file', 1),
    response: RecognizeResponseSchema,
    // The upload is checked (400) before readiness (503): see the kit's route.ts.
    requiresReady: 'in-handler',
    handler: async ({ body, req, signal, requireReady }) => {
      const file = requireUploads(req, 'file', 'image')[0] as UploadedFile;
      const started = performance.now();
      const image = await decodeUpload(rt, file);
      requireReady();
      const result = await recognizeOne(rt, file, image, body.confidence_threshold, signal, started);
      rt.stats.record(result.processing_time_ms);
      const recognized = result.faces.filter((f) => f.recognized).length;
      return ok(`Found ${plural(result.faces_detected, 'face')}, ${String(recognized)} recognized`, {
        ...result,
        device: deviceOf(rt),
      });
    },
  });
}

export function recognizeBatchRoute(rt: FaceRuntime): AnyRoute {
  const max = rt.config.MAX_RECOGNIZE_BATCH;
  return defineRoute({
    method: 'post',
    path: '/recognize_batch',
    summary: `Recognize faces in several images (at most ${String(max)}); each image gets its own result`,
    description:
      'An image that cannot be read gets `{filename, error}` in its place; the others are still processed.',
    tags: ['recognition'],
    body: RecognizeFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyParser: imageUploads(rt, 'files', max),
    response: RecognizeBatchResponseSchema,
    requiresReady: 'in-handler',
    handler: async ({ body, req, signal, requireReady }) => {
      const files = requireUploads(req, 'files');
      requireReady();
      const started = performance.now();
      const results = [];
      for (const file of files) {
        signal.throwIfAborted();
        try {
          const at = performance.now();
          const image = await decodeUpload(rt, file);
          results.push(await recognizeOne(rt, file, image, body.confidence_threshold, signal, at));
        } catch (error) {
          // An image that cannot be used (not an image, too many pixels) fails alone.
          if (!(error instanceof HttpError) || error.status >= 500) throw error;
          results.push({ filename: file.originalname, error: error.message });
        }
      }
      const elapsed = ms(performance.now() - started);
      rt.stats.record(elapsed);
      const faces = results.reduce((sum, r) => sum + ('faces_detected' in r ? r.faces_detected : 0), 0);
      return ok(`Processed ${plural(files.length, 'image')}, found ${plural(faces, 'face')}`, {
        total_images: files.length,
        results,
        processing_time_ms: elapsed,
        device: deviceOf(rt),
      });
    },
  });
}
