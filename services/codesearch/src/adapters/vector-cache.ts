import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Code-title vectors cached under `<DATA_DIR>/codesearch/vectors/`, one file per (embedder, type,
 * texts) so a new model or a re-imported set never reuses stale vectors; written whole then renamed.
 */

export class VectorCache {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'codesearch', 'vectors');
  }

  static key(embedderId: string, type: string, texts: readonly string[]): string {
    const h = createHash('sha256');
    for (const t of texts) h.update(t).update('\u0000');
    return `${type}-${embedderId}-${h.digest('hex').slice(0, 16)}`;
  }

  async read(key: string, rows: number, dim: number): Promise<Float32Array | null> {
    const buf = await readFile(join(this.dir, `${key}.f32`)).catch(() => null);
    if (buf?.length !== rows * dim * 4) return null;
    // A file this size is read into a buffer of its own: viewed in place, not copied.
    if (buf.byteOffset % 4 === 0) return new Float32Array(buf.buffer, buf.byteOffset, rows * dim);
    const out = new Float32Array(rows * dim);
    Buffer.from(out.buffer).set(buf);
    return out;
  }

  /** Stores the vectors and drops older files of the same type and embedder. */
  async write(key: string, vectors: Float32Array): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const tmp = join(this.dir, `.${key}.${randomBytes(4).toString('hex')}.tmp`);
    const handle = await open(tmp, 'w', 0o644);
    try {
      await handle.write(Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, join(this.dir, `${key}.f32`));
    const stem = key.slice(0, key.lastIndexOf('-'));
    for (const name of await readdir(this.dir)) {
      if (name.startsWith(`${stem}-`) && name !== `${key}.f32`)
        await rm(join(this.dir, name), { force: true });
    }
  }
}
