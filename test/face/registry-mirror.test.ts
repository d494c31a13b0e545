import { describe, expect, it } from '@jest/globals';
import { People } from '../../services/face/src/domain/people.js';
import { RegistryMirror, type MirrorSource } from '../../services/face/src/domain/registry-mirror.js';

// The in-memory registry against a store whose reads the test finishes in any order: each read
// sees the store as it was when the read began (as a query does), and returns when released.

const A = new Float32Array([1, 0, 0]);
const B = new Float32Array([0, 1, 0]);
const C = new Float32Array([0, 0, 1]);

interface Pending {
  readonly what: 'person' | 'all';
  readonly id?: number;
  release(): void;
  fail(error: Error): void;
}

class FakeStore implements MirrorSource {
  readonly persons = new Map<number, { name: string; vectors: Float32Array[] }>();
  readonly pending: Pending[] = [];
  inFlight = 0;
  maxInFlight = 0;
  reads = 0;

  put(id: number, name: string, vectors: Float32Array[]): void {
    this.persons.set(id, { name, vectors: [...vectors] });
  }

  private read<T>(what: 'person' | 'all', value: T, id?: number): Promise<T> {
    this.reads++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise<T>((resolve, reject) => {
      this.pending.push({
        what,
        ...(id === undefined ? {} : { id }),
        release: () => {
          this.inFlight--;
          resolve(value);
        },
        fail: (error) => {
          this.inFlight--;
          reject(error);
        },
      });
    });
  }

  loadAll() {
    const persons = [...this.persons].map(([id, p]) => ({ id, name: p.name }));
    const embeddings = [...this.persons].flatMap(([id, p]) =>
      p.vectors.map((vector) => ({ personId: id, vector })),
    );
    return this.read('all', { persons, embeddings });
  }

  loadPerson(id: number) {
    const p = this.persons.get(id);
    return this.read(
      'person',
      p === undefined ? null : { person: { id, name: p.name }, embeddings: [...p.vectors] },
      id,
    );
  }

  /** Releases the oldest pending read (or the one at `index`). */
  async release(index = 0): Promise<void> {
    const [read] = this.pending.splice(index, 1);
    if (read === undefined) throw new Error('no read pending');
    read.release();
    await settle();
  }
}

/** Lets every promise continuation run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function mirrorOf(store: FakeStore, errors: unknown[] = []): RegistryMirror {
  const mirror = new RegistryMirror({
    onError: (error) => errors.push(error),
    retryDelay: () => settle(),
  });
  mirror.open(store, () => new People(3));
  return mirror;
}

async function loaded(store: FakeStore, mirror: RegistryMirror): Promise<void> {
  const done = mirror.load();
  await settle();
  await store.release();
  await done;
}

async function who(mirror: RegistryMirror, vector: Float32Array): Promise<string> {
  const people = mirror.people;
  if (people === undefined) throw new Error('not loaded');
  const [match] = await people.match([vector], 0.9);
  return match?.personName ?? 'none';
}

describe('RegistryMirror', () => {
  it('never puts back a person deleted while a read of them is in flight', async () => {
    const store = new FakeStore();
    store.put(1, 'Ann', [A]);
    const mirror = mirrorOf(store);
    await loaded(store, mirror);

    store.put(1, 'Ann', [A, B]); // another replica adds a photo
    const reloaded = mirror.changed(1); // its notification: the read sees Ann with A and B
    await settle();
    store.persons.delete(1); // then Ann is deleted, and that notification comes before the read returns
    mirror.deleted(1);
    expect(await who(mirror, A)).toBe('Unknown');
    await store.release();
    await reloaded;
    expect(await who(mirror, A)).toBe('Unknown');
    expect(await who(mirror, B)).toBe('Unknown');
    expect(mirror.people?.persons).toBe(0);
    expect(store.pending).toEqual([]);
  });

  it('reads one person one read at a time, coalesces changes during a read into one more, and the last state wins', async () => {
    const store = new FakeStore();
    store.put(1, 'Ann', [A]);
    const mirror = mirrorOf(store);
    await loaded(store, mirror);

    store.put(1, 'Ann', [A, B]);
    const first = mirror.changed(1); // reads [A, B]
    await settle();
    store.put(1, 'Ann', [A, B, C]);
    const second = mirror.changed(1);
    const third = mirror.changed(1);
    await settle();
    // The newer state is not read while the older read runs, so the older cannot land last.
    expect(store.pending.length).toBe(1);
    await store.release(); // [A, B] applied, then one more read for both changes
    expect(store.pending.length).toBe(1);
    await store.release();
    await Promise.all([first, second, third]);
    expect(store.maxInFlight).toBe(1);
    expect(store.reads).toBe(3); // the load, then two reads of Ann for three changes
    expect(mirror.people?.embeddings).toBe(3);
    expect(await who(mirror, C)).toBe('Ann');
  });

  it('resolves a change only once a read begun after it is in the index', async () => {
    const store = new FakeStore();
    const mirror = mirrorOf(store);
    await loaded(store, mirror);
    store.put(7, 'Bo', [A]);
    const a = mirror.changed(7);
    await settle();
    store.put(7, 'Bo', [A, B]);
    let settled = false;
    const b = mirror.changed(7).then(() => (settled = true));
    await store.release(); // the first read ([A]) is applied, but it began before the second change
    expect(mirror.people?.embeddings).toBe(1);
    expect(settled).toBe(false);
    expect(store.pending.length).toBe(1);
    await store.release();
    await Promise.all([a, b]);
    expect(settled).toBe(true);
    expect(mirror.people?.embeddings).toBe(2);
  });

  it('applies deletes and changes that arrive while the whole registry is being read', async () => {
    const store = new FakeStore();
    store.put(1, 'Ann', [A]);
    store.put(2, 'Bo', [B]);
    const mirror = mirrorOf(store);
    const load = mirror.load();
    await settle(); // the snapshot is taken: Ann and Bo
    store.persons.delete(1);
    mirror.deleted(1); // deleted during loading (before there is an index to remove Ann from)
    store.put(3, 'Cy', [C]);
    void mirror.changed(3); // registered elsewhere during the load
    await settle();
    await store.release(0); // the snapshot (Cy's read waits behind it in the list)
    await load;
    expect(await who(mirror, A)).toBe('Unknown');
    expect(await who(mirror, B)).toBe('Bo');
    // Cy's read began before the snapshot was installed: it is read again after it.
    while (store.pending.length > 0) await store.release();
    expect(await who(mirror, C)).toBe('Cy');
  });

  it('runs whole reloads one at a time and coalesces the requests made during one', async () => {
    const store = new FakeStore();
    store.put(1, 'Ann', [A]);
    const mirror = mirrorOf(store);
    const first = mirror.load();
    await settle();
    const second = mirror.load();
    const third = mirror.load();
    expect(second).toBe(third);
    store.put(2, 'Bo', [B]);
    await store.release(); // the first snapshot: Ann only
    await first;
    expect(store.pending.length).toBe(1); // the second starts after the first, and reads Bo
    await store.release();
    await second;
    expect(store.maxInFlight).toBe(1);
    expect(await who(mirror, B)).toBe('Bo');
  });

  it('retries a failed read of a person', async () => {
    const store = new FakeStore();
    const errors: unknown[] = [];
    const mirror = mirrorOf(store, errors);
    await loaded(store, mirror);
    store.put(4, 'Di', [A]);
    const done = mirror.changed(4);
    await settle();
    store.pending.shift()?.fail(new Error('connection reset'));
    while (store.pending.length === 0) await settle();
    await store.release();
    await done;
    expect(errors).toEqual([new Error('connection reset')]);
    expect(await who(mirror, A)).toBe('Di');
  });
});
