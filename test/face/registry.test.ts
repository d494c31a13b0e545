import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { SqliteRegistry } from '../../services/face/src/adapters/sqlite-registry.js';
import { EmbeddingIndex } from '../../services/face/src/domain/embedding-index.js';
import { l2Normalize } from '../../services/face/src/domain/similarity.js';

const unit = (...xs: number[]) => l2Normalize(new Float32Array(xs));

describe('EmbeddingIndex', () => {
  it('finds the best row for each query, removes a person’s rows, and grows', () => {
    const index = new EmbeddingIndex(3, 2);
    index.add(1, unit(1, 0, 0));
    index.add(2, unit(0, 1, 0));
    index.add(1, unit(1, 1, 0));
    index.add(3, unit(0, 0, 1));
    expect(index.size).toBe(4);
    const [a, b] = index.search([unit(1, 0.1, 0), unit(0, 0.2, 1)]);
    expect(a).toEqual({ personId: 1, cosine: expect.closeTo(0.995, 3) });
    expect(b?.personId).toBe(3);
    expect(index.remove(1)).toBe(2);
    expect(index.size).toBe(2);
    expect(index.search([unit(1, 0, 0)])[0]?.personId).not.toBe(1);
    expect(() => index.add(4, unit(1, 0))).toThrow('2 dimensions');
    expect(new EmbeddingIndex(3).search([unit(1, 0, 0)])).toEqual([undefined]);
  });
});

describe('SqliteRegistry', () => {
  let registry: SqliteRegistry | undefined;
  afterEach(async () => {
    await registry?.close();
  });
  const at = '2026-11-21T10:00:00.000Z';

  it('registers, appends embeddings to a known name, lists, loads and deletes', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'face-registry-')), 'registry.sqlite');
    registry = new SqliteRegistry(path);
    const lan = await registry.register({
      name: 'Lan',
      email: null,
      pid: 'P-1',
      model: 'm1',
      embeddings: [unit(1, 0)],
      at,
    });
    expect(lan).toMatchObject({
      name: 'Lan',
      pid: 'P-1',
      email: null,
      encodingDimensions: 2,
      embeddingCount: 1,
    });
    const again = await registry.register({
      name: 'Lan',
      email: 'lan@example.org',
      pid: null,
      model: 'm1',
      embeddings: [unit(1, 1), unit(1, 2)],
      at: '2026-11-21T11:00:00.000Z',
    });
    expect(again).toMatchObject({
      id: lan.id,
      email: 'lan@example.org',
      pid: 'P-1',
      embeddingCount: 3,
      createdAt: at,
    });
    await registry.register({
      name: 'Minh',
      email: null,
      pid: null,
      model: 'm1',
      embeddings: [unit(0, 1)],
      at,
    });
    expect((await registry.list()).map((p) => p.name)).toEqual(['Lan', 'Minh']);
    expect(await registry.count()).toBe(2);

    // A second process opening the same file sees the same state.
    await registry.close();
    registry = new SqliteRegistry(path);
    const loaded = await registry.loadAll('m1');
    expect(loaded.persons).toHaveLength(2);
    expect(loaded.embeddings).toHaveLength(4);
    expect(Array.from(loaded.embeddings[0]!.vector)).toEqual(Array.from(unit(1, 0)));
    expect((await registry.loadAll('other')).embeddings).toHaveLength(0);

    expect(await registry.delete('Lan')).toEqual({ deleted: true, id: lan.id });
    expect(await registry.delete('Lan')).toEqual({ deleted: false, id: null });
    expect((await registry.loadAll('m1')).embeddings).toHaveLength(1);
  });

  it('refuses to mix embeddings of another recognition model under one person, storing nothing', async () => {
    registry = new SqliteRegistry(':memory:');
    await registry.register({
      name: 'Lan',
      email: null,
      pid: null,
      model: 'm1',
      embeddings: [unit(1, 0)],
      at,
    });
    await expect(
      registry.register({
        name: 'Lan',
        email: null,
        pid: null,
        model: 'm2',
        embeddings: [unit(1, 0, 0)],
        at,
      }),
    ).rejects.toThrow('recognition model m1');
    expect((await registry.list())[0]?.embeddingCount).toBe(1);
    expect(await registry.countOtherModels('m2')).toBe(1);
    expect(await registry.ping()).toBe(true);
  });
});
