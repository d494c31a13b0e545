/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PostgresRegistry } from '../../services/face/src/adapters/postgres-registry.js';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { postgresBinDir, startPostgres, type TestPostgres } from '../fixtures/postgres.js';
import { ensureFaceFixtures, form, post, startFace, type FaceTestServer } from './helpers.js';

// Two replicas of the face service on one PostgreSQL registry: a person registered or deleted
// through one is recognized (or forgotten) by the other, and concurrent registrations of one
// person through both lose nothing.

const present = postgresBinDir() !== undefined;
if (!present)
  console.log(
    'skipping the PostgreSQL registry tests: PostgreSQL is not installed (apt-get install postgresql)',
  );

interface Recognized {
  faces: { recognized: boolean; person_name: string }[];
}

(present ? describe : describe.skip)('face registry on PostgreSQL, two replicas', () => {
  let pgServer: TestPostgres;
  let photos: Record<FacePhoto, string>;
  let a: FaceTestServer;
  let b: FaceTestServer;

  const replica = async () => startFace({}, await PostgresRegistry.open(pgServer.url));
  const recognize = async (srv: FaceTestServer, key: FacePhoto) =>
    (await post<Recognized>(`${srv.url}/recognize_faces`, form({}, [{ field: 'file', path: photos[key] }])))
      .body.data.faces[0];
  async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
    let value = await read();
    for (let i = 0; i < 100 && !ok(value); i++) {
      await new Promise((r) => setTimeout(r, 50));
      value = await read();
    }
    return value;
  }

  beforeAll(async () => {
    photos = await ensureFaceFixtures();
    pgServer = await startPostgres();
    a = await replica();
    b = await replica();
  }, 180_000);
  afterAll(async () => {
    await a.close();
    await b.close();
    pgServer.stop();
  });

  it('recognizes through one replica a person registered through the other, and forgets them when deleted', async () => {
    const reg = await post(
      `${a.url}/register_person`,
      form({ person_name: 'Barack Obama' }, [{ field: 'file', path: photos.obama }]),
    );
    expect(reg.status).toBe(200);
    const seen = await eventually(
      () => recognize(b, 'obama2'),
      (f) => f?.recognized === true,
    );
    expect(seen).toMatchObject({ recognized: true, person_name: 'Barack Obama' });

    const del = await fetch(`${b.url}/delete_person/${encodeURIComponent('Barack Obama')}`, {
      method: 'DELETE',
    });
    expect(del.status).toBe(200);
    const gone = await eventually(
      () => recognize(a, 'obama3'),
      (f) => f?.recognized === false,
    );
    expect(gone).toMatchObject({ recognized: false, person_name: 'Unknown' });
  }, 60_000);

  it('keeps every photo when both replicas add photos of one person at once', async () => {
    const add = (srv: FaceTestServer, key: FacePhoto) =>
      post(
        `${srv.url}/register_person`,
        form({ person_name: 'Joe Biden' }, [{ field: 'file', path: photos[key] }]),
      );
    const results = await Promise.all([add(a, 'biden'), add(b, 'biden'), add(a, 'biden'), add(b, 'biden')]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const srv of [a, b]) {
      const list = (await (await fetch(`${srv.url}/list_persons`)).json()) as {
        data: { persons: { name: string; embeddings: number }[] };
      };
      expect(list.data.persons).toEqual([expect.objectContaining({ name: 'Joe Biden', embeddings: 4 })]);
    }
    expect(await recognize(b, 'biden')).toMatchObject({ recognized: true, person_name: 'Joe Biden' });
  }, 60_000);

  it('loads the shared registry when a replica starts, and reports the database in /health', async () => {
    const c = await replica();
    try {
      expect(await recognize(c, 'biden')).toMatchObject({ recognized: true, person_name: 'Joe Biden' });
      const health = (await (await fetch(`${c.url}/health`)).json()) as { data: { database: string } };
      expect(health.data.database).toBe('connected');
    } finally {
      await c.close();
    }
  }, 60_000);
});
