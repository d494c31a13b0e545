import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { form, post, startFace, type FaceTestServer } from './helpers.js';

// The face service without its models: a malformed request still gets its 400 (no file, not an
// image, not a video), and only a well-formed one the 503 that says what is missing.

describe('face service without its models', () => {
  let srv: FaceTestServer;
  let png: Buffer;
  beforeAll(async () => {
    srv = await startFace(
      {
        FACE_DETECTOR_PATH: '/nonexistent/face-detector.onnx',
        FACE_RECOGNIZER_PATH: '/nonexistent/face-recognizer.onnx',
      },
      undefined,
      { settle: false },
    );
    png = await sharp({ create: { width: 64, height: 48, channels: 3, background: 'gray' } })
      .png()
      .toBuffer();
  });
  afterAll(() => srv.close());

  it.each(['/recognize_faces', '/register_person'])(
    '%s: 400 for a missing or broken image, 503 for a good one',
    async (path) => {
      const fields = path === '/register_person' ? { person_name: 'Somebody' } : {};
      const missing = await post(`${srv.url}${path}`, form(fields));
      expect([missing.status, missing.body.message]).toEqual([
        400,
        'Send the image in the form field `file`',
      ]);
      const broken = await post(
        `${srv.url}${path}`,
        form(fields, [{ field: 'file', bytes: Buffer.from('not an image at all'), name: 'x.png' }]),
      );
      expect(broken.status).toBe(400);
      const empty = await post(
        `${srv.url}${path}`,
        form(fields, [{ field: 'file', bytes: Buffer.alloc(0), name: 'e.png' }]),
      );
      expect(empty.status).toBe(400);
      const good = await post(
        `${srv.url}${path}`,
        form(fields, [{ field: 'file', bytes: png, name: 'g.png' }]),
      );
      expect(good.status).toBe(503);
      expect(good.body.message).toContain('/nonexistent/face-detector.onnx');
    },
  );

  it('batch routes: 400 without files, 503 with them', async () => {
    for (const path of ['/recognize_batch', '/register_batch']) {
      const fields = path === '/register_batch' ? { person_name: 'Somebody' } : {};
      expect((await post(`${srv.url}${path}`, form(fields))).status).toBe(400);
      const good = await post(
        `${srv.url}${path}`,
        form(fields, [{ field: 'files', bytes: png, name: 'g.png' }]),
      );
      expect(good.status).toBe(503);
    }
  });

  it('a form field that breaks its schema is 422 while not ready', async () => {
    const res = await post(
      `${srv.url}/recognize_faces`,
      form({ confidence_threshold: '7' }, [{ field: 'file', bytes: png, name: 'g.png' }]),
    );
    expect(res.status).toBe(422);
  });
});
