import { defineRoute, NotFoundError, type AnyRoute } from '@clinicalsuite/kit';
import { summarizeGpu } from '@clinicalsuite/kit/gpu';
import { z } from 'zod';
import { ok } from '../domain/envelope.js';
import {
  DeleteResponseSchema,
  GpuStatusResponseSchema,
  HealthResponseSchema,
  ListPersonsResponseSchema,
  RootResponseSchema,
  StatusResponseSchema,
} from '../schemas/face.js';
import { deviceOf, uptimeSeconds, type FaceRuntime } from './runtime.js';

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /register_person': 'Register a person from an image with one face (person_name, file)',
  'POST /register_batch': 'Register a person from up to 10 images (person_name, files)',
  'POST /recognize_faces': 'Recognize every face in an image (file, confidence_threshold)',
  'POST /recognize_batch': 'Recognize faces in several images (files, confidence_threshold)',
  'POST /recognize_video': 'Recognize faces in a video (file, fps, confidence_threshold)',
  'GET /list_persons': 'Registered persons',
  'DELETE /delete_person/{name}': 'Delete a person and their face embeddings',
  'GET /health': 'Health: database, model, device',
  'GET /status': 'Registered persons, active requests, average processing time',
  'GET /gpu_status': 'GPU name, memory, utilization, temperature',
  'GET /docs': 'Interactive API documentation',
};

export function rootRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information: version, device, features, endpoints',
    tags: ['info'],
    response: RootResponseSchema,
    handler: () =>
      ok('Face recognition service', {
        version: rt.version,
        device: deviceOf(rt),
        features: [
          `face detection (${rt.config.FACE_DETECTOR === 'retinaface' ? 'RetinaFace' : 'BlazeFace'})`,
          rt.host.engine === undefined
            ? 'face embeddings (recognizer not loaded yet, cosine matching)'
            : `face embeddings (${String(rt.host.engine.engine.dim)}-d, cosine matching)`,
          'registration from one or several images',
          'batch recognition',
          'video recognition with face tracking (ffmpeg)',
          'SQLite registry (WAL)',
        ],
        endpoints: ENDPOINTS,
      }),
  });
}

export function healthRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/health',
    summary:
      'Health: 200 when the database answers, the models are loaded and registry changes are heard, 503 otherwise',
    tags: ['info'],
    response: HealthResponseSchema,
    responses: { 503: { description: 'Not ready, with the reason', schema: HealthResponseSchema } },
    handler: async ({ res }) => {
      const database = await rt.registry.ping();
      const loaded = rt.host.engine !== undefined;
      const healthy = database && loaded && rt.readiness.ready;
      const gpu = (await rt.gpu.read()).available;
      res.status(healthy ? 200 : 503);
      const reason = !database ? 'the registry database does not answer' : (rt.readiness.reason ?? undefined);
      return {
        success: healthy,
        message: healthy ? 'Service is healthy' : `Service is not ready: ${reason ?? 'starting'}`,
        data: {
          status: healthy ? 'healthy' : database && loaded && !rt.feed.up ? 'degraded' : 'unhealthy',
          database: database ? 'connected' : 'disconnected',
          gpu: gpu ? 'available' : 'unavailable',
          device: deviceOf(rt),
          model_loaded: loaded,
          uptime_seconds: uptimeSeconds(rt),
          active_requests: rt.gate.running,
          ...(healthy || reason === undefined ? {} : { reason }),
        },
      };
    },
  });
}

export function statusRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Registered persons, active requests, average processing time, concurrency limit',
    tags: ['info'],
    response: StatusResponseSchema,
    handler: async () =>
      ok('Service status', {
        registered_persons: await rt.registry.count(),
        device: deviceOf(rt),
        active_requests: rt.gate.running,
        average_processing_time_ms: rt.stats.averageMs,
        uptime_seconds: uptimeSeconds(rt),
        concurrent_limit: rt.gate.limit,
      }),
  });
}

export function gpuStatusRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/gpu_status',
    summary: 'GPU name, memory, utilization and temperature (available: false on CPU)',
    tags: ['info'],
    response: GpuStatusResponseSchema,
    handler: async () => {
      const summary = summarizeGpu(await rt.gpu.read());
      return ok(
        summary.available ? `GPU ${summary.gpu_name ?? ''} available` : 'No GPU available: running on CPU',
        summary,
      );
    },
  });
}

export function listPersonsRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/list_persons',
    summary: 'Registered persons',
    tags: ['registry'],
    response: ListPersonsResponseSchema,
    handler: async () => {
      const persons = (await rt.registry.list()).map((p) => ({
        name: p.name,
        email: p.email,
        pid: p.pid,
        encoding_dimensions: p.encodingDimensions,
        embeddings: p.embeddingCount,
        created_at: p.createdAt,
        updated_at: p.updatedAt,
      }));
      return ok(`${String(persons.length)} registered persons`, { persons, total_count: persons.length });
    },
  });
}

export function deletePersonRoute(rt: FaceRuntime): AnyRoute {
  return defineRoute({
    method: 'delete',
    path: '/delete_person/:name',
    summary: 'Delete a person and every face embedding stored for them',
    tags: ['registry'],
    params: z.object({ name: z.string().min(1) }),
    response: DeleteResponseSchema,
    responses: { 404: { description: 'No person of that name' } },
    // Deleting needs no model: it works while the models load.
    requiresReady: false,
    handler: async ({ params }) => {
      const { deleted, id } = await rt.registry.delete(params.name);
      if (!deleted || id === null) throw new NotFoundError(`Person '${params.name}' not found`);
      // Also while the models load: the registry being read into memory forgets them too.
      rt.mirror.deleted(id);
      return { success: true as const, message: `Person '${params.name}' deleted successfully` };
    },
  });
}
