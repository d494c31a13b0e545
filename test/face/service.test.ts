/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { ensureFaceFixtures, form, post, startFace, type FaceTestServer } from './helpers.js';

// The face service with the real default models (BlazeFace + a 512-d recognizer) on real photos.

interface Face {
  location: { top: number; right: number; bottom: number; left: number };
  recognized: boolean;
  person_name: string;
  confidence: number;
  distance: number;
}
interface Recognized {
  filename: string;
  faces_detected: number;
  faces: Face[];
  processing_time_ms: number;
  device: string;
}

let photos: Record<FacePhoto, string>;
let srv: FaceTestServer;

beforeAll(async () => {
  photos = await ensureFaceFixtures();
  srv = await startFace({ MAX_IMAGE_BYTES: '1mb' });
}, 180_000);
afterAll(() => srv.close());

const photo = (key: FacePhoto, field = 'file') => ({ field, path: photos[key] });
const recognize = (key: FacePhoto, fields: Record<string, string> = {}) =>
  post<Recognized>(`${srv.url}/recognize_faces`, form(fields, [photo(key)]));
const persons = async () =>
  (
    (await (await fetch(`${srv.url}/list_persons`)).json()) as {
      data: { persons: { name: string; embeddings: number }[] };
    }
  ).data.persons;

describe('face service on real photos', () => {
  it('is healthy with the models loaded and the database connected, and describes itself', async () => {
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      success: true,
      data: {
        status: 'healthy',
        database: 'connected',
        gpu: 'unavailable',
        device: 'cpu',
        model_loaded: true,
        active_requests: 0,
      },
    });
    const root = (await (await fetch(`${srv.url}/`)).json()) as {
      data: { version: string; features: string[]; endpoints: Record<string, string> };
    };
    expect(root.data.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(root.data.features).toContain('face embeddings (512-d, cosine matching)');
    expect(Object.keys(root.data.endpoints)).toContain('POST /register_person');
  });

  it('registers a person from one photo and recognizes them in a different photo', async () => {
    const reg = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'Barack Obama', pid: 'P-44' }, [photo('obama')]),
    );
    expect(reg.status).toBe(200);
    expect(reg.body).toMatchObject({
      success: true,
      message: "Person 'Barack Obama' registered successfully",
      data: { person_name: 'Barack Obama', encoding_dimensions: 512, faces_detected: 1, device: 'cpu' },
    });
    const loc = (reg.body.data as { face_location: Face['location'] }).face_location;
    expect(loc.left).toBeLessThan(loc.right);
    expect(loc.top).toBeLessThan(loc.bottom);

    for (const other of ['obama2', 'obama3'] as const) {
      const { status, body } = await recognize(other);
      expect(status).toBe(200);
      expect(body.message).toBe('Found 1 face, 1 recognized');
      const [face] = body.data.faces;
      expect(face).toMatchObject({ recognized: true, person_name: 'Barack Obama' });
      expect(face!.confidence).toBeGreaterThanOrEqual(0.5);
      // confidence is the cosine clamped to 0..1; distance is 1 - cosine.
      expect(face!.distance).toBeCloseTo(1 - face!.confidence, 3);
    }
  });

  it('does not recognize a different person at the default threshold, and honours confidence_threshold', async () => {
    const { body } = await recognize('biden');
    expect(body.data.faces_detected).toBe(1);
    expect(body.data.faces[0]).toMatchObject({ recognized: false, person_name: 'Unknown' });
    expect(body.data.faces[0]!.confidence).toBeLessThan(0.4);
    const strict = await recognize('obama2', { confidence_threshold: '0.95' });
    expect(strict.body.data.faces[0]).toMatchObject({ recognized: false, person_name: 'Unknown' });
    const bad = await recognize('obama2', { confidence_threshold: '1.5' });
    expect(bad.status).toBe(422);
    expect(bad.body.success).toBe(false);
    expect(bad.body.message).toContain('confidence_threshold');
  });

  it('finds every face of a group photo and none in a photo of dogs', async () => {
    const group = await recognize('group7');
    expect(group.body.data.faces_detected).toBeGreaterThanOrEqual(6);
    expect(group.body.message).toMatch(/^Found \d+ faces, 0 recognized$/);
    expect((await recognize('dogs')).body.data.faces_detected).toBe(0);
  });

  it('refuses register_person without exactly one face, for non-images, oversize files and pixel bombs, storing nothing', async () => {
    const before = await persons();
    const several = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'Crowd' }, [photo('group3')]),
    );
    expect(several).toMatchObject({
      status: 400,
      body: { success: false, message: expect.stringContaining('3 faces found') },
    });
    const none = await post(`${srv.url}/register_person`, form({ person_name: 'Dog' }, [photo('dogs')]));
    expect(none).toMatchObject({ status: 400, body: { message: expect.stringContaining('No face found') } });
    const text = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'Text' }, [
        { field: 'file', bytes: Buffer.from('not an image'), name: 'notes.txt' },
      ]),
    );
    expect(text).toMatchObject({
      status: 400,
      body: { message: 'notes.txt is not an image (JPEG or PNG expected)' },
    });
    const webp = await sharp(photos.single).webp().toBuffer();
    const wrongType = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'W' }, [{ field: 'file', bytes: webp, name: 'a.webp' }]),
    );
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.message).toContain('WEBP');
    const big = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'Big' }, [
        { field: 'file', bytes: Buffer.alloc(2 * 1024 * 1024, 1), name: 'big.jpg' },
      ]),
    );
    expect(big).toMatchObject({
      status: 413,
      body: { success: false, message: expect.stringContaining('1 MB') },
    });
    const bomb = await sharp({ create: { width: 12_000, height: 6_000, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    const bombed = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'Bomb' }, [{ field: 'file', bytes: bomb, name: 'bomb.png' }]),
    );
    expect(bombed.status).toBe(413);
    expect(bombed.body.message).toContain('12000x6000');
    const noName = await post(`${srv.url}/register_person`, form({}, [photo('single')]));
    expect(noName.status).toBe(422);
    expect(noName.body.message).toContain('person_name');
    const noFile = await post(`${srv.url}/register_person`, form({ person_name: 'Nobody' }));
    expect(noFile.status).toBe(400);
    expect(await persons()).toEqual(before);
  });

  it('register_batch keeps the images with exactly one face and says why it skipped the others', async () => {
    const res = await post(
      `${srv.url}/register_batch`,
      form({ person_name: 'Joe Biden' }, [
        photo('biden', 'files'),
        photo('dogs', 'files'),
        photo('group3', 'files'),
      ]),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      message: "Processed 1/3 images for 'Joe Biden'",
      data: { total_images: 3, processed_images: 1, skipped_images: 2, average_encoding_size: 512 },
    });
    expect((res.body.data as { skipped: { reason: string }[] }).skipped.map((s) => s.reason)).toEqual([
      'no face found',
      '3 faces found',
    ]);
    expect((await recognize('biden')).body.data.faces[0]).toMatchObject({
      recognized: true,
      person_name: 'Joe Biden',
    });

    const none = await post(
      `${srv.url}/register_batch`,
      form({ person_name: 'Nobody' }, [photo('dogs', 'files')]),
    );
    expect(none.status).toBe(400);
    expect(none.body.message).toContain('nothing was registered');
    const eleven = await post(
      `${srv.url}/register_batch`,
      form(
        { person_name: 'Many' },
        Array.from({ length: 11 }, () => photo('single', 'files')),
      ),
    );
    expect(eleven.status).toBe(400);
    expect(eleven.body.message).toContain('`files` (at most 10)');
    expect((await persons()).map((p) => p.name)).toEqual(['Barack Obama', 'Joe Biden']);
  });

  it('recognize_batch answers per image, with an error in place of an unreadable one', async () => {
    const res = await post<{
      total_images: number;
      results: (Recognized | { filename: string; error: string })[];
    }>(
      `${srv.url}/recognize_batch`,
      form({}, [
        photo('obama3', 'files'),
        photo('group2', 'files'),
        { field: 'files', bytes: Buffer.from('x'), name: 'x.png' },
      ]),
    );
    expect(res.status).toBe(200);
    expect(res.body.data.total_images).toBe(3);
    const [a, b, c] = res.body.data.results;
    expect(a).toMatchObject({
      filename: 'obama3.jpg',
      faces_detected: 1,
      faces: [{ person_name: 'Barack Obama' }],
    });
    expect(b).toMatchObject({ filename: '2009_004587.jpg', faces_detected: 2 });
    expect(c).toEqual({ filename: 'x.png', error: 'x.png is not an image (JPEG or PNG expected)' });
  });

  it('reports status with real averages, lists persons, deletes one (404 the second time) and forgets them', async () => {
    const status = (await (await fetch(`${srv.url}/status`)).json()) as { data: Record<string, number> };
    expect(status.data).toMatchObject({ registered_persons: 2, concurrent_limit: 3, active_requests: 0 });
    expect(status.data['average_processing_time_ms']).toBeGreaterThan(0);
    const listed = await persons();
    expect(listed.find((p) => p.name === 'Barack Obama')).toMatchObject({ embeddings: 1 });

    const del = await fetch(`${srv.url}/delete_person/${encodeURIComponent('Joe Biden')}`, {
      method: 'DELETE',
    });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ success: true, message: "Person 'Joe Biden' deleted successfully" });
    const again = await fetch(`${srv.url}/delete_person/${encodeURIComponent('Joe Biden')}`, {
      method: 'DELETE',
    });
    expect(again.status).toBe(404);
    expect(await again.json()).toEqual({ success: false, message: "Person 'Joe Biden' not found" });
    expect((await recognize('biden')).body.data.faces[0]).toMatchObject({
      recognized: false,
      person_name: 'Unknown',
    });
  });

  it('keeps the registry across a restart', async () => {
    await srv.close();
    srv = await startFace({ DATA_DIR: srv.dataDir, MAX_IMAGE_BYTES: '1mb' });
    expect((await persons()).map((p) => p.name)).toEqual(['Barack Obama']);
    expect((await recognize('obama2')).body.data.faces[0]).toMatchObject({
      recognized: true,
      person_name: 'Barack Obama',
    });
  }, 60_000);

  it('exports per-stage timings, faces per image and the registry size', async () => {
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    expect(text).toMatch(/face_inference_duration_seconds_count\{[^}]*stage="detect"[^}]*\} [1-9]/);
    expect(text).toMatch(/face_faces_per_image_count\{[^}]*\} [1-9]/);
    expect(text).toMatch(/face_registry_persons\{[^}]*\} 1/);
  });
});
