/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { PostgresRegistry } from '../../services/face/src/adapters/postgres-registry.js';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { postgresBinDir, startPostgres, type TestPostgres } from '../fixtures/postgres.js';
import { describeReal } from '../fixtures/real-component.js';
import { startTcpProxy } from '../fixtures/tcp-proxy.js';
import { ensureFaceFixtures, form, post, startFace, type FaceTestServer } from './helpers.js';

// Two replicas of the face service on one PostgreSQL registry: a person registered or deleted
// through one is recognized (or forgotten) by the other, and concurrent registrations of one
// person through both lose nothing.

const missing =
  postgresBinDir() === undefined ? 'PostgreSQL is not installed (apt-get install postgresql)' : null;

interface Recognized {
  faces: { recognized: boolean; person_name: string }[];
}

describeReal(missing, 'face registry on PostgreSQL, two replicas', () => {
  let pgServer: TestPostgres;
  let photos: Record<FacePhoto, string>;
  let a: FaceTestServer;
  let b: FaceTestServer;

  const replica = async () => startFace({}, await PostgresRegistry.open(pgServer.url));
  const recognize = async (srv: FaceTestServer, key: FacePhoto) =>
    (await post<Recognized>(`${srv.url}/recognize_faces`, form({}, [{ field: 'file', path: photos[key] }])))
      .body.data.faces[0];
  async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, tries = 100): Promise<T> {
    let value = await read();
    for (let i = 0; i < tries && !ok(value); i++) {
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
  it('reconnects a dropped LISTEN connection, reports degraded meanwhile, and reads the registry again', async () => {
    const admin = new pg.Client({ connectionString: pgServer.url });
    await admin.connect();
    const listeners = async () =>
      (
        await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN face_registry'",
        )
      ).rows.map((r) => r.pid);
    const before = new Set(await listeners());
    const c = await startFace(
      {},
      // Long enough for the delete and the registration below to finish while it is down, on a
      // busy machine too (a registration runs the detector on every tile of the photo).
      await PostgresRegistry.open(pgServer.url, { reconnect: { initialMs: 10_000, maxMs: 10_000 } }),
    );
    interface Health {
      success: boolean;
      data: { status: string; database: string; model_loaded: boolean };
    }
    const health = async () => {
      const res = await fetch(`${c.url}/health`);
      return { code: res.status, ...((await res.json()) as Health) };
    };
    try {
      expect(await recognize(c, 'biden')).toMatchObject({ recognized: true, person_name: 'Joe Biden' });
      const mine = (await listeners()).filter((pid) => !before.has(pid));
      expect(mine).toHaveLength(1);
      await admin.query('SELECT pg_terminate_backend($1)', [mine[0]]); // as a PostgreSQL restart does
      const down = await eventually(health, (h) => h.data.status === 'degraded');
      expect(down).toMatchObject({
        code: 503,
        success: false,
        data: { status: 'degraded', database: 'connected', model_loaded: true },
      });
      // Its index may be stale: it recognizes nobody until it listens and has read the registry again.
      const stale = await post(`${c.url}/recognize_faces`, form({}, [{ field: 'file', path: photos.biden }]));
      expect(stale.status).toBe(503);

      // While c hears nothing, through a: Joe Biden deleted, Barack Obama registered.
      const del = await fetch(`${a.url}/delete_person/${encodeURIComponent('Joe Biden')}`, {
        method: 'DELETE',
      });
      expect(del.status).toBe(200);
      const reg = await post(
        `${a.url}/register_person`,
        form({ person_name: 'Barack Obama' }, [{ field: 'file', path: photos.obama }]),
      );
      expect(reg.status).toBe(200);
      expect((await health()).data.status).toBe('degraded');

      let up = await health();
      for (let i = 0; i < 400 && up.code !== 200; i++) {
        await new Promise((r) => setTimeout(r, 50));
        up = await health();
      }
      expect(up).toMatchObject({ code: 200, data: { status: 'healthy' } });
      // c listens again, on a new connection. (Only c's is counted: the other replicas' LISTEN
      // connections show their last query, which their periodic `SELECT 1` check replaces.)
      expect((await listeners()).filter((pid) => !before.has(pid) && pid !== mine[0])).toHaveLength(1);
      expect(await recognize(c, 'biden')).toMatchObject({ recognized: false, person_name: 'Unknown' });
      expect(await recognize(c, 'obama2')).toMatchObject({ recognized: true, person_name: 'Barack Obama' });
      // And it hears changes again.
      const again = await fetch(`${a.url}/delete_person/${encodeURIComponent('Barack Obama')}`, {
        method: 'DELETE',
      });
      expect(again.status).toBe(200);
      const gone = await eventually(
        () => recognize(c, 'obama3'),
        (f) => f?.recognized === false,
      );
      expect(gone).toMatchObject({ recognized: false, person_name: 'Unknown' });
    } finally {
      await c.close();
      await admin.end();
    }
  }, 60_000);

  /** The status and first face of a recognition (503 while the replica is not ready). */
  const attempt = async (srv: FaceTestServer, key: FacePhoto) => {
    const res = await post<Recognized>(
      `${srv.url}/recognize_faces`,
      form({}, [{ field: 'file', path: photos[key] }]),
    );
    return { status: res.status, face: res.status === 200 ? res.body.data.faces[0] : undefined };
  };

  it('notices a LISTEN connection that died silently, and forgets a person deleted meanwhile', async () => {
    const { port } = new URL(pgServer.url);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(port) });
    const proxied = new URL(pgServer.url);
    proxied.port = String(proxy.port);
    const c = await startFace(
      {},
      await PostgresRegistry.open(proxied.toString(), {
        listenCheckMs: 300,
        queryTimeoutMs: 1000,
        reloadMs: 0,
        reconnect: { initialMs: 100, maxMs: 500 },
      }),
    );
    try {
      const reg = await post(
        `${a.url}/register_person`,
        form({ person_name: 'Barack Obama' }, [{ field: 'file', path: photos.obama }]),
      );
      expect(reg.status).toBe(200);
      const seen = await eventually(
        () => attempt(c, 'obama2'),
        (r) => r.face?.recognized === true,
      );
      expect(seen.face).toMatchObject({ recognized: true, person_name: 'Barack Obama' });

      // Every connection of c now loses what it sends and hears nothing, with no error: the
      // NOTIFY of the delete below never reaches it.
      proxy.blackHole();
      const del = await fetch(`${a.url}/delete_person/${encodeURIComponent('Barack Obama')}`, {
        method: 'DELETE',
      });
      expect(del.status).toBe(200);

      const forgotten = await eventually(
        () => attempt(c, 'obama3'),
        (r) => r.status === 200 && r.face?.recognized === false,
        300,
      );
      expect(forgotten).toEqual({
        status: 200,
        face: expect.objectContaining({ recognized: false, person_name: 'Unknown' }),
      });
      // And it hears changes again, on its new connection.
      const again = await post(
        `${a.url}/register_person`,
        form({ person_name: 'Barack Obama' }, [{ field: 'file', path: photos.obama }]),
      );
      expect(again.status).toBe(200);
      const back = await eventually(
        () => attempt(c, 'obama2'),
        (r) => r.face?.recognized === true,
      );
      expect(back.face).toMatchObject({ recognized: true, person_name: 'Barack Obama' });
    } finally {
      await c.close();
      await proxy.close();
    }
  }, 60_000);

  it('reads the registry again periodically: a change whose notification never came is corrected', async () => {
    const d = await startFace({}, await PostgresRegistry.open(pgServer.url, { reloadMs: 500 }));
    const admin = new pg.Client({ connectionString: pgServer.url });
    await admin.connect();
    try {
      expect((await attempt(d, 'obama2')).face).toMatchObject({
        recognized: true,
        person_name: 'Barack Obama',
      });
      // Deleted behind the service's back: no NOTIFY.
      await admin.query('DELETE FROM face_persons WHERE name = $1', ['Barack Obama']);
      const forgotten = await eventually(
        () => attempt(d, 'obama3'),
        (r) => r.face?.recognized === false,
      );
      expect(forgotten.face).toMatchObject({ recognized: false, person_name: 'Unknown' });
    } finally {
      await d.close();
      await admin.end();
    }
  }, 60_000);
});
