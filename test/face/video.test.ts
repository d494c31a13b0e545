/** @jest-environment ./test/face/ort-environment.cjs */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { ensureFaceFixtures, form, post, startFace, type FaceTestServer } from './helpers.js';

// Videos made with ffmpeg from real photographs: Obama (2 s), Biden (2 s), then three people (1 s).

interface VideoData {
  filename: string;
  total_frames: number;
  faces_found: number;
  recognitions: {
    frame: number;
    timestamp_sec: number;
    person_name: string;
    confidence: number;
    frames_seen: number;
  }[];
}

let photos: Record<FacePhoto, string>;
let srv: FaceTestServer;
const dir = mkdtempSync(join(tmpdir(), 'face-video-'));
const videos: Record<string, string> = {};

function slideshow(out: string, codec: string[]): string {
  const shots: [FacePhoto, number][] = [
    ['obama2', 2],
    ['biden', 2],
    ['group3', 1],
  ];
  const inputs = shots.flatMap(([p, seconds]) => ['-loop', '1', '-t', String(seconds), '-i', photos[p]]);
  const fit = shots
    .map(
      (_, i) =>
        `[${String(i)}]scale=640:480:force_original_aspect_ratio=decrease,pad=640:480:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=10[v${String(i)}]`,
    )
    .join(';');
  const path = join(dir, out);
  execFileSync('ffmpeg', [
    ...['-v', 'error', '-y', ...inputs],
    ...['-filter_complex', `${fit};[v0][v1][v2]concat=n=3:v=1[v]`, '-map', '[v]', ...codec, path],
  ]);
  return path;
}

beforeAll(async () => {
  photos = await ensureFaceFixtures();
  videos['mp4'] = slideshow('walk.mp4', ['-c:v', 'libx264', '-pix_fmt', 'yuv420p']);
  videos['avi'] = slideshow('walk.avi', ['-c:v', 'mjpeg', '-q:v', '3']);
  videos['mov'] = slideshow('walk.mov', ['-c:v', 'libx264', '-pix_fmt', 'yuv420p']);
  srv = await startFace();
  const reg = await post(
    `${srv.url}/register_person`,
    form({ person_name: 'Barack Obama' }, [{ field: 'file', path: photos.obama }]),
  );
  expect(reg.status).toBe(200);
}, 180_000);
afterAll(() => srv.close());

const video = (path: string, fields: Record<string, string> = {}, name?: string) =>
  post<VideoData>(
    `${srv.url}/recognize_video`,
    form(fields, [{ field: 'file', path, ...(name === undefined ? {} : { name }) }]),
  );

describe('recognize_video', () => {
  it('reports a person who stays in view once, with the frame and time they were first recognized', async () => {
    const { status, body } = await video(videos['mp4']!, { fps: '5' });
    expect(status).toBe(200);
    expect(body.message).toBe(`Processed ${String(body.data.total_frames)} frames from walk.mp4`);
    expect(body.data.total_frames).toBeGreaterThanOrEqual(24);
    expect(body.data.total_frames).toBeLessThanOrEqual(26);
    // Obama, Biden and three people: five tracks (more only if a detection dropped out for long).
    expect(body.data.faces_found).toBeGreaterThanOrEqual(5);
    expect(body.data.faces_found).toBeLessThanOrEqual(7);
    const obama = body.data.recognitions.filter((r) => r.person_name === 'Barack Obama');
    expect(obama).toHaveLength(1);
    expect(obama[0]!.frame).toBeLessThanOrEqual(1);
    expect(obama[0]!.timestamp_sec).toBeCloseTo(obama[0]!.frame / 5, 3);
    expect(obama[0]!.frames_seen).toBeGreaterThanOrEqual(8);
    expect(obama[0]!.confidence).toBeGreaterThanOrEqual(0.5);
    expect(body.data.recognitions.every((r) => r.person_name === 'Barack Obama')).toBe(true);
  }, 60_000);

  it('reads AVI and MOV too, and honours fps', async () => {
    const avi = await video(videos['avi']!, { fps: '2' });
    expect(avi.status).toBe(200);
    expect(avi.body.data.total_frames).toBeGreaterThanOrEqual(9);
    expect(avi.body.data.total_frames).toBeLessThanOrEqual(11);
    const mov = await video(videos['mov']!, { fps: '1' });
    expect(mov.status).toBe(200);
    expect(mov.body.data.recognitions.map((r) => r.person_name)).toEqual(['Barack Obama']);
  }, 60_000);

  it('refuses what is not an MP4, AVI or MOV video, and bad fps', async () => {
    const jpeg = await video(photos.obama, {}, 'clip.mp4');
    expect(jpeg.status).toBe(400);
    expect(jpeg.body.message).toBe('clip.mp4 is not an MP4, AVI or MOV video');
    const text = await post(
      `${srv.url}/recognize_video`,
      form({}, [{ field: 'file', bytes: Buffer.from('hello'), name: 'a.mp4' }]),
    );
    expect(text.status).toBe(400);
    expect(text.body.message).toContain('a.mp4 is not a readable video');
    const fps = await video(videos['mp4']!, { fps: '0' });
    expect(fps.status).toBe(422);
    expect(fps.body.message).toContain('fps');
  });

  it('reads a blank fps or confidence_threshold as its default, and refuses one that is not a number naming it', async () => {
    const { status, body } = await video(videos['mp4']!, { fps: '', confidence_threshold: ' ' });
    expect(status).toBe(200);
    // fps 5 over 5 s; at threshold 0 Biden and the three people would all be "Barack Obama".
    expect(body.data.total_frames).toBeGreaterThanOrEqual(24);
    expect(body.data.total_frames).toBeLessThanOrEqual(26);
    expect(body.data.recognitions.map((r) => r.person_name)).toEqual(['Barack Obama']);
    for (const [field, value] of [
      ['fps', 'five'],
      ['fps', '0x5'],
      ['confidence_threshold', 'abc'],
    ] as const) {
      const bad = await video(videos['mp4']!, { [field]: value });
      expect(bad.status).toBe(422);
      expect(bad.body.message).toContain(`${field} must be a number`);
    }
  }, 60_000);

  it('counts image uploads against BODY_MEMORY_LIMIT, but not a video, which goes to disk', async () => {
    const budget = 1024 * 1024;
    const tight = await startFace({ BODY_MEMORY_LIMIT: String(budget) });
    try {
      const avi = videos['avi']!;
      expect(statSync(avi).size).toBeGreaterThan(budget);
      const streamed = await post<VideoData>(
        `${tight.url}/recognize_video`,
        form({}, [{ field: 'file', path: avi }]),
      );
      expect(streamed.status).toBe(200);
      expect(streamed.body.data.total_frames).toBeGreaterThan(0);
      const half = Buffer.alloc(600 * 1024, 1);
      const batch = await post(
        `${tight.url}/register_batch`,
        form({ person_name: 'Too Much' }, [
          { field: 'files', bytes: half, name: 'a.jpg' },
          { field: 'files', bytes: half, name: 'b.jpg' },
        ]),
      );
      expect(batch.status).toBe(413);
      expect(batch.body.message).toContain(
        `larger than this service's BODY_MEMORY_LIMIT (${String(budget)} bytes)`,
      );
      const listed = (await (await fetch(`${tight.url}/list_persons`)).json()) as {
        data: { persons: unknown[] };
      };
      expect(listed.data.persons).toEqual([]);
    } finally {
      await tight.close();
    }
  });

  it('says video is unavailable when ffmpeg is not installed', async () => {
    const noFfmpeg = await startFace({
      FFPROBE_PATH: '/nonexistent/ffprobe',
      FFMPEG_PATH: '/nonexistent/ffmpeg',
    });
    try {
      const res = await post(
        `${noFfmpeg.url}/recognize_video`,
        form({}, [{ field: 'file', path: videos['mp4']! }]),
      );
      expect(res.status).toBe(503);
      expect(res.body.message).toContain('the video library (ffmpeg) is not installed');
    } finally {
      await noFfmpeg.close();
    }
  });
});
