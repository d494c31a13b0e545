/** @jest-environment ./test/face/ort-environment.cjs */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pngHeaderBomb } from '../fixtures/bombs.js';
import { ensureFaceFixtures, form, post, startFace, type FaceTestServer } from './helpers.js';

// What a picture or a video would cost to decode is read from its headers and refused before the
// decoder runs; what the headers cannot tell is bounded by ffmpeg's memory limit. The videos are
// made here with ffmpeg from its test sources: a few kilobytes each.

const dir = mkdtempSync(join(tmpdir(), 'face-limits-'));

/** An H.264 MP4 of `source` (an ffmpeg lavfi source) for `seconds`. */
function video(name: string, source: string, seconds: number): string {
  const path = join(dir, name);
  execFileSync('ffmpeg', [
    ...['-v', 'error', '-y', '-f', 'lavfi', '-i', source, '-t', String(seconds)],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', path],
  ]);
  return path;
}

let square4k: string;
let manyFrames: string;
let small: string;

beforeAll(async () => {
  await ensureFaceFixtures();
  // 4096 x 4096: 16.8 megapixels a frame (the default limit is 4096 x 2160).
  square4k = video('square.mp4', 'color=c=gray:size=4096x4096:rate=10', 0.3);
  // 2 s at 1000 frames a second: 2000 frames of 64 x 64.
  manyFrames = video('many.mp4', 'testsrc=size=64x64:rate=1000', 2);
  small = video('small.mp4', 'testsrc=size=640x480:rate=10', 2);
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface VideoData {
  total_frames: number;
}
const recognize = (url: string, path: string) =>
  post<VideoData>(`${url}/recognize_video`, form({ fps: '5' }, [{ field: 'file', path }]));

describe('face decoders refuse from the headers', () => {
  let srv: FaceTestServer;
  beforeAll(async () => {
    srv = await startFace({ MAX_VIDEO_FRAMES: '1000' });
  }, 120_000);
  afterAll(() => srv.close());

  it('413 for a PNG whose header claims 100000 x 100000 pixels (69 bytes), before decoding', async () => {
    const bomb = pngHeaderBomb(100_000, 100_000);
    expect(bomb.length).toBeLessThan(100);
    const res = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'Bomb' }, [{ field: 'file', bytes: bomb, name: 'bomb.png' }]),
    );
    expect(res.status).toBe(413);
    expect(res.body.message).toContain('100000x100000 pixels');
  });

  it('413 for a video whose frames are over MAX_VIDEO_PIXELS, before decoding', async () => {
    const { status, body } = await recognize(srv.url, square4k);
    expect(status).toBe(413);
    expect(body).toMatchObject({ success: false });
    expect(body.message).toBe(
      'square.mp4 has frames of 4096x4096 pixels; at most 8847360 pixels a frame are accepted (MAX_VIDEO_PIXELS)',
    );
  });

  it('413 for a video that holds more than MAX_VIDEO_FRAMES frames, before decoding', async () => {
    const { status, body } = await recognize(srv.url, manyFrames);
    expect(status).toBe(413);
    expect(body.message).toBe('many.mp4 holds 2000 frames; at most 1000 are accepted (MAX_VIDEO_FRAMES)');
    const fine = await recognize(srv.url, small);
    expect(fine.status).toBe(200);
    expect(fine.body.data.total_frames).toBe(10);
  }, 60_000);
});

describe('ffmpeg under its memory limit', () => {
  let srv: FaceTestServer;
  beforeAll(async () => {
    // Measured with 2 decoding threads: about 80 MiB for 640 x 480, 210 MiB for 4096 x 4096.
    srv = await startFace({ MAX_VIDEO_PIXELS: '20000000', CHILD_MEMORY_LIMIT: '140mb' });
  }, 120_000);
  afterAll(() => srv.close());

  it('413 when decoding needs more memory than CHILD_MEMORY_LIMIT; a small video within it is read', async () => {
    const { status, body } = await recognize(srv.url, square4k);
    expect(status).toBe(413);
    expect(body.message).toBe(
      'the video needs more memory to decode than one video process may use (140 MiB, CHILD_MEMORY_LIMIT)',
    );
    const fine = await recognize(srv.url, small);
    expect(fine.status).toBe(200);
    expect(fine.body.data.total_frames).toBe(10);
  }, 60_000);
});
