import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  childLimits,
  defineRoute,
  multipart,
  PayloadTooLargeError,
  type AnyRoute,
} from '@clinicalsuite/kit';
import { z } from 'zod';
import { probeVideo, videoFrames } from '../adapters/video.js';
import { ms, ok, plural } from '../domain/envelope.js';
import { FaceTracker } from '../domain/tracker.js';
import { round4 } from '../domain/similarity.js';
import { ConfidenceThresholdSchema, formNumber, mustBeNumber } from '../schemas/face.js';
import { deviceOf, requireUploads, type FaceRuntime } from './runtime.js';

export const MAX_FPS = 30;

const VideoFormSchema = z.object({
  fps: formNumber(
    z
      .number(mustBeNumber('fps'))
      .int()
      .min(1)
      .max(MAX_FPS)
      .default(5)
      .describe('Frames analysed per second of video'),
  ),
  confidence_threshold: ConfidenceThresholdSchema,
});

const VideoResponseSchema = z.object({
  success: z.literal(true),
  message: z.string(),
  data: z.object({
    filename: z.string(),
    total_frames: z.number().int().describe('Frames analysed'),
    faces_found: z.number().int().describe('Distinct faces (tracks) seen'),
    recognitions: z
      .array(
        z.object({
          frame: z.number().int().describe('First analysed frame (0-based) where the person was recognized'),
          timestamp_sec: z.number(),
          person_name: z.string(),
          confidence: z.number().describe('Best confidence over the track'),
          track_id: z.number().int(),
          frames_seen: z.number().int(),
        }),
      )
      .describe('One entry per tracked face that was recognized, not one per frame'),
    duration_sec: z.number(),
    processing_time_ms: z.number(),
    device: z.string(),
  }),
});

export function recognizeVideoRoute(rt: FaceRuntime): AnyRoute {
  const c = rt.config;
  return defineRoute({
    method: 'post',
    path: '/recognize_video',
    summary: 'Recognize the people in a video (MP4, AVI, MOV), each tracked face reported once',
    description:
      `Frames are decoded by ffmpeg at \`fps\` (1-${String(MAX_FPS)}) and tracked across frames. Limits: ` +
      `${String(Math.round(c.MAX_VIDEO_BYTES / 1024 / 1024))} MB and ${String(c.MAX_VIDEO_SECONDS)} s per video (400), ` +
      `${String(c.MAX_VIDEO_PIXELS)} pixels a frame and ${String(c.MAX_VIDEO_FRAMES)} frames (413), checked from the ` +
      'headers before decoding; decoding past its memory (413) or CPU time (422) is stopped. ' +
      'Without ffmpeg installed the endpoint answers 503.',
    tags: ['recognition'],
    body: VideoFormSchema,
    bodyContentType: 'multipart/form-data',
    bodyInMemory: false,
    bodyParser: multipart({
      files: [{ name: 'file', maxCount: 1 }],
      maxFileBytes: c.MAX_VIDEO_BYTES,
      storage: 'disk',
    }),
    response: VideoResponseSchema,
    // The video is probed (400) before readiness (503): see the kit's route.ts.
    requiresReady: 'in-handler',
    handler: async ({ body, req, signal, requireReady }) => {
      const file = requireUploads(req, 'file', 'video')[0];
      if (file?.path === undefined) throw new Error('the video upload was not written to disk');
      const started = performance.now();
      const limits = childLimits(c);
      const info = await probeVideo(c.FFPROBE_PATH, file.path, file.originalname, {
        timeoutMs: c.REQUEST_TIMEOUT_MS,
        signal,
        limits,
      });
      if (info.durationSeconds > c.MAX_VIDEO_SECONDS) {
        throw new BadRequestError(
          `${file.originalname} lasts ${info.durationSeconds.toFixed(1)} s; at most ${String(c.MAX_VIDEO_SECONDS)} s are accepted`,
          { code: 'video_too_long' },
        );
      }
      // What decoding would cost, from the headers: refused before ffmpeg decodes a frame.
      if (info.width * info.height > c.MAX_VIDEO_PIXELS) {
        throw new PayloadTooLargeError(
          `${file.originalname} has frames of ${String(info.width)}x${String(info.height)} pixels; ` +
            `at most ${String(c.MAX_VIDEO_PIXELS)} pixels a frame are accepted (MAX_VIDEO_PIXELS)`,
        );
      }
      if (info.frames !== null && info.frames > c.MAX_VIDEO_FRAMES) {
        throw new PayloadTooLargeError(
          `${file.originalname} holds ${String(info.frames)} frames; ` +
            `at most ${String(c.MAX_VIDEO_FRAMES)} are accepted (MAX_VIDEO_FRAMES)`,
        );
      }
      requireReady();
      const models = rt.host.require();
      const tracker = new FaceTracker({ minIou: 0.3, maxGapFrames: Math.max(2, Math.round(body.fps)) });
      let frame = 0;
      const maxFrames = Math.ceil(c.MAX_VIDEO_SECONDS * body.fps) + 1;
      for await (const image of videoFrames(c.FFMPEG_PATH, file.path, info, {
        fps: body.fps,
        maxWidth: c.VIDEO_MAX_WIDTH,
        maxFrames,
        maxSeconds: c.MAX_VIDEO_SECONDS,
        signal,
        limits,
      })) {
        const { faces, timings } = await models.engine.analyze(image, signal);
        rt.metrics.stage.observe({ stage: 'detect' }, timings.detectMs / 1000);
        rt.metrics.facesPerImage.observe(faces.length);
        const matches = await models.people.match(
          faces.map((f) => f.embedding),
          body.confidence_threshold,
        );
        tracker.update(
          frame,
          faces.map((f, i) => {
            const m = matches[i];
            return {
              box: f.detection.box,
              recognized: m?.recognized ?? false,
              personName: m?.personName ?? 'Unknown',
              confidence: m?.confidence ?? 0,
            };
          }),
        );
        frame++;
      }
      signal.throwIfAborted();
      const tracks = tracker.all();
      const recognitions = tracks.flatMap((t) =>
        t.person === undefined
          ? []
          : [
              {
                frame: t.person.firstFrame,
                timestamp_sec: round4(t.person.firstFrame / body.fps),
                person_name: t.person.name,
                confidence: t.person.confidence,
                track_id: t.id,
                frames_seen: t.frames,
              },
            ],
      );
      rt.metrics.recognitions.inc({ result: 'recognized' }, recognitions.length);
      const elapsed = ms(performance.now() - started);
      rt.stats.record(elapsed);
      return ok(`Processed ${plural(frame, 'frame')} from ${file.originalname}`, {
        filename: file.originalname,
        total_frames: frame,
        faces_found: tracks.length,
        recognitions,
        duration_sec: round4(info.durationSeconds),
        processing_time_ms: elapsed,
        device: deviceOf(rt),
      });
    },
  });
}
