/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { ensureFaceFixtures, form, post, startFace, type FaceTestServer } from './helpers.js';

// The face service's form fields as clients really send them (blank inputs, odd names, UTF-8 file
// names), with the real default models on real photos.

interface Face {
  recognized: boolean;
  person_name: string;
  confidence: number;
}
interface Recognized {
  filename: string;
  faces: Face[];
}

let photos: Record<FacePhoto, string>;
let srv: FaceTestServer;

beforeAll(async () => {
  photos = await ensureFaceFixtures();
  srv = await startFace();
  const reg = await post(
    `${srv.url}/register_person`,
    // An HTML form sends its empty optional inputs as empty strings.
    form({ person_name: 'Barack Obama', email: '', pid: '  ' }, [{ field: 'file', path: photos.obama }]),
  );
  expect(reg.status).toBe(200);
}, 180_000);
afterAll(() => srv.close());

const persons = async () =>
  (
    (await (await fetch(`${srv.url}/list_persons`)).json()) as {
      data: { persons: { name: string; email: string | null; pid: string | null }[] };
    }
  ).data.persons;

const recognize = (key: FacePhoto, fields: Record<string, string>, name?: string) =>
  post<Recognized>(
    `${srv.url}/recognize_faces`,
    form(fields, [{ field: 'file', path: photos[key], ...(name === undefined ? {} : { name }) }]),
  );

describe('face form fields', () => {
  it('stores blank optional fields (email, pid) as absent', async () => {
    expect(await persons()).toEqual([
      expect.objectContaining({ name: 'Barack Obama', email: null, pid: null }),
    ]);
  });

  it('reads a blank confidence_threshold as the default 0.4, never as 0', async () => {
    for (const blank of ['', ' ', '\t']) {
      const { status, body } = await recognize('biden', { confidence_threshold: blank });
      expect(status).toBe(200);
      expect(body.data.faces[0]).toMatchObject({ recognized: false, person_name: 'Unknown' });
      expect(body.data.faces[0]!.confidence).toBeLessThan(0.4);
    }
    const obama = await recognize('obama2', { confidence_threshold: '' });
    expect(obama.body.data.faces[0]).toMatchObject({ recognized: true, person_name: 'Barack Obama' });
    const spaced = await recognize('obama2', { confidence_threshold: ' 0.95 ' });
    expect(spaced.body.data.faces[0]).toMatchObject({ recognized: false });

    const batch = await post<{ results: Recognized[] }>(
      `${srv.url}/recognize_batch`,
      form({ confidence_threshold: '' }, [{ field: 'files', path: photos.biden }]),
    );
    expect(batch.status).toBe(200);
    expect(batch.body.data.results[0]!.faces[0]).toMatchObject({ recognized: false, person_name: 'Unknown' });
  });

  it('refuses a confidence_threshold that is not a decimal number with 422 naming the field', async () => {
    for (const bad of ['abc', '0x1', '1/2', 'NaN', 'Infinity']) {
      const { status, body } = await recognize('obama2', { confidence_threshold: bad });
      expect(status).toBe(422);
      expect(body.success).toBe(false);
      expect(body.message).toContain('confidence_threshold');
    }
    const batch = await post(
      `${srv.url}/recognize_batch`,
      form({ confidence_threshold: 'high' }, [{ field: 'files', path: photos.biden }]),
    );
    expect(batch.status).toBe(422);
    expect(batch.body.message).toContain('confidence_threshold must be a number');
  });

  it('refuses a person name of dots only (it could never be deleted by path), storing nothing', async () => {
    for (const name of ['.', '..', ' .. ', '...']) {
      const res = await post(
        `${srv.url}/register_person`,
        form({ person_name: name }, [{ field: 'file', path: photos.obama2 }]),
      );
      expect(res.status).toBe(422);
      expect(res.body.message).toContain('person_name must not consist of dots only');
      const batch = await post(
        `${srv.url}/register_batch`,
        form({ person_name: name }, [{ field: 'files', path: photos.obama2 }]),
      );
      expect(batch.status).toBe(422);
    }
    expect((await persons()).map((p) => p.name)).toEqual(['Barack Obama']);
    // Names with dots and more are still names.
    const dotted = await post(
      `${srv.url}/register_person`,
      form({ person_name: 'J. R. R.' }, [{ field: 'file', path: photos.biden }]),
    );
    expect(dotted.status).toBe(200);
    const del = await fetch(`${srv.url}/delete_person/${encodeURIComponent('J. R. R.')}`, {
      method: 'DELETE',
    });
    expect(del.status).toBe(200);
  });

  it('returns UTF-8 file names as sent', async () => {
    const one = await recognize('obama2', {}, 'ảnh_Nguyễn.jpg');
    expect(one.body.data.filename).toBe('ảnh_Nguyễn.jpg');
    const batch = await post<{ skipped: { filename: string }[] }>(
      `${srv.url}/register_batch`,
      form({ person_name: 'Barack Obama' }, [
        { field: 'files', path: photos.obama3, name: 'chân_dung.jpg' },
        { field: 'files', path: photos.dogs, name: 'chó_Đốm.jpg' },
      ]),
    );
    expect(batch.status).toBe(200);
    expect(batch.body.data.skipped).toEqual([{ filename: 'chó_Đốm.jpg', reason: 'no face found' }]);
  });

  it('keeps a person’s name out of the logs, deletion path included', async () => {
    const name = 'Nguyễn Thị Bích';
    const before = srv.logs.length;
    const reg = await post(
      `${srv.url}/register_person`,
      form({ person_name: name }, [{ field: 'file', path: photos.biden }]),
    );
    expect(reg.status).toBe(200);
    expect((await recognize('biden', {})).body.data.faces[0]).toMatchObject({ person_name: name });
    const del = await fetch(`${srv.url}/delete_person/${encodeURIComponent(name)}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    const again = await fetch(`${srv.url}/delete_person/${encodeURIComponent(name)}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    const deletions = () =>
      srv.logs.slice(before).filter((l) => l['route'] === '/delete_person/:name' && 'res' in l);
    for (let i = 0; i < 100 && deletions().length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(deletions().map((l) => l['req'])).toEqual([
      { method: 'DELETE', url: '/delete_person/:name' },
      { method: 'DELETE', url: '/delete_person/:name' },
    ]);
    const logged = JSON.stringify(srv.logs.slice(before));
    for (const leak of [name, encodeURIComponent(name), 'Nguy', 'Bích']) expect(logged).not.toContain(leak);
  });
});
