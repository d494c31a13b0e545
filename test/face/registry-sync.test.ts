/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import type { Registry, RegistryChange, RegisterInput } from '../../services/face/src/adapters/registry.js';
import { SqliteRegistry } from '../../services/face/src/adapters/sqlite-registry.js';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { ensureFaceFixtures, form, post, startFace, type FaceTestServer } from './helpers.js';

// The service's in-memory registry against changes that land while it reads the store: deletes
// while the models and the registry load, other replicas' changes during the load, and a delete
// racing the reload of a person. The store is SQLite; "another replica" writes to the same file
// through its own connection and notifies the way PostgreSQL's LISTEN would (only to a listener
// subscribed at the time). Reads can be held after they have read, to put a change in between.

class HeldRegistry implements Registry {
  private listener: ((change: RegistryChange) => void) | undefined;
  holdLoadAll: { read: () => void; until: Promise<void> } | undefined;
  holdLoadPerson: { read: () => void; until: Promise<void> } | undefined;

  constructor(readonly inner: SqliteRegistry) {}

  /** A change committed by another replica: heard only when subscribed (as LISTEN). */
  notify(change: RegistryChange): void {
    this.listener?.(change);
  }

  async loadAll(model: string) {
    const stored = await this.inner.loadAll(model);
    const hold = this.holdLoadAll;
    if (hold !== undefined) {
      hold.read();
      await hold.until;
    }
    return stored;
  }

  async loadPerson(id: number, model: string) {
    const found = await this.inner.loadPerson(id, model);
    const hold = this.holdLoadPerson;
    if (hold !== undefined) {
      hold.read();
      await hold.until;
    }
    return found;
  }

  register(input: RegisterInput) {
    return this.inner.register(input);
  }
  list() {
    return this.inner.list();
  }
  delete(name: string) {
    return this.inner.delete(name);
  }
  count() {
    return this.inner.count();
  }
  countOtherModels(model: string) {
    return this.inner.countOtherModels(model);
  }
  ping() {
    return this.inner.ping();
  }
  subscribe(listener: (change: RegistryChange) => void): Promise<void> {
    this.listener = listener;
    return Promise.resolve();
  }
  close() {
    return this.inner.close();
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Holds the next read after it has read; `read` resolves then, `release` lets it return. */
function hold(): {
  read: Promise<void>;
  release: () => void;
  slot: { read: () => void; until: Promise<void> };
} {
  const read = deferred();
  const until = deferred();
  return { read: read.promise, release: until.resolve, slot: { read: read.resolve, until: until.promise } };
}

let photos: Record<FacePhoto, string>;
let dataDir: string;
let model: string;
/** The photos' embeddings as registered, to register again as another replica would. */
const stored = new Map<string, Float32Array[]>();
/** Another replica's connection to the same store. */
let other: SqliteRegistry;
let srv: FaceTestServer | undefined;
/** The registry `srv` runs on. */
let registry: HeldRegistry;

const registryPath = () => join(dataDir, 'face-registry.sqlite');
const recognize = async (key: FacePhoto) =>
  (
    await post<{ faces: { recognized: boolean; person_name: string }[] }>(
      `${(srv as FaceTestServer).url}/recognize_faces`,
      form({}, [{ field: 'file', path: photos[key] }]),
    )
  ).body.data.faces[0];
const idOf = async (name: string) => (await other.list()).find((p) => p.name === name)?.id ?? -1;
const registerElsewhere = (name: string) =>
  other.register({
    name,
    email: null,
    pid: null,
    model,
    embeddings: stored.get(name) ?? [],
    at: new Date().toISOString(),
  });

beforeAll(async () => {
  photos = await ensureFaceFixtures();
  const first = await startFace();
  dataDir = first.dataDir;
  for (const [name, key] of [
    ['Barack Obama', 'obama'],
    ['Joe Biden', 'biden'],
  ] as const) {
    const reg = await post(
      `${first.url}/register_person`,
      form({ person_name: name }, [{ field: 'file', path: photos[key] }]),
    );
    expect(reg.status).toBe(200);
  }
  await first.close();
  other = new SqliteRegistry(registryPath());
  for (const p of await other.list()) {
    model = p.model;
    stored.set(p.name, (await other.loadPerson(p.id, p.model))?.embeddings ?? []);
  }
}, 180_000);

afterAll(async () => {
  await srv?.close();
  await other.close();
});

describe('face registry in memory, in step with the store', () => {
  it('forgets a person deleted while the models load, after the registry was read', async () => {
    registry = new HeldRegistry(new SqliteRegistry(registryPath()));
    const held = hold();
    registry.holdLoadAll = held.slot;
    srv = await startFace({ DATA_DIR: dataDir }, registry, { settle: false });
    await held.read; // the registry is read, the engine not installed yet
    const del = await fetch(`${srv.url}/delete_person/${encodeURIComponent('Barack Obama')}`, {
      method: 'DELETE',
    });
    expect(del.status).toBe(200);
    held.release();
    await srv.service.host.settled();
    expect(srv.service.host.state).toBe('ready');
    expect(await recognize('obama2')).toMatchObject({ recognized: false, person_name: 'Unknown' });
    expect(await recognize('biden')).toMatchObject({ recognized: true, person_name: 'Joe Biden' });
    await srv.close();
    srv = undefined;
  }, 60_000);

  it("applies other replicas' registrations and deletions committed while the registry loads", async () => {
    registry = new HeldRegistry(new SqliteRegistry(registryPath()));
    const held = hold();
    registry.holdLoadAll = held.slot;
    srv = await startFace({ DATA_DIR: dataDir }, registry, { settle: false });
    await held.read; // the snapshot has Joe Biden and not Barack Obama
    const obama = await registerElsewhere('Barack Obama');
    registry.notify({ kind: 'upsert', personId: obama.id });
    const biden = await idOf('Joe Biden');
    await other.delete('Joe Biden');
    registry.notify({ kind: 'delete', personId: biden });
    held.release();
    await srv.service.host.settled();
    const seen = async () => (await recognize('obama2'))?.recognized === true;
    for (let i = 0; i < 50 && !(await seen()); i++) await new Promise((r) => setTimeout(r, 20));
    expect(await recognize('obama2')).toMatchObject({ recognized: true, person_name: 'Barack Obama' });
    expect(await recognize('biden')).toMatchObject({ recognized: false, person_name: 'Unknown' });
  }, 60_000);

  it('never recognizes again a person deleted while a reload of them was reading', async () => {
    const obama = await idOf('Barack Obama');
    const held = hold();
    registry.holdLoadPerson = held.slot;
    registry.notify({ kind: 'upsert', personId: obama }); // e.g. another replica added a photo
    await held.read; // the reload has read Barack Obama
    registry.holdLoadPerson = undefined;
    await other.delete('Barack Obama');
    registry.notify({ kind: 'delete', personId: obama });
    expect(await recognize('obama2')).toMatchObject({ recognized: false, person_name: 'Unknown' });
    held.release();
    // Whatever the reload does next (it may read again) has happened after a few turns.
    for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await recognize('obama2')).toMatchObject({ recognized: false, person_name: 'Unknown' });
    expect(await recognize('obama3')).toMatchObject({ recognized: false, person_name: 'Unknown' });
  }, 60_000);
});
