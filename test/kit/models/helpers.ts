/** Test helpers for the model store: a local file server with Range support, temp dirs, wheels. */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { transformFile } from '@swc/core';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export function randomFile(bytes: number): Buffer {
  return randomBytes(bytes);
}

export async function makeTempDir(prefix = 'cs-models-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export interface Route {
  body?: Buffer;
  /** Answer with this status (and no body) instead of the file. */
  status?: number;
  /** Answer with `status` only for the first N requests, then serve the body. */
  failTimes?: number;
  /** On the first request, send this many body bytes, then cut the connection. */
  cutFirstAfter?: number;
  /** Ignore Range headers (answer 200 with the whole body). */
  ignoreRange?: boolean;
  /** Send the body in chunks of this size with this delay between them. */
  chunkBytes?: number;
  chunkDelayMs?: number;
  /** Answer 302 to this path. */
  redirectTo?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  status: number;
  /** Body bytes the server sent (before any cut). */
  sentBytes: number;
}

export interface TestServer {
  url: string;
  requests: RecordedRequest[];
  /** Requests that returned body bytes of the file (200 or 206 with data). */
  bodyRequests(path: string): RecordedRequest[];
  close(): Promise<void>;
}

export async function startServer(routes: Record<string, Route>): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const seen = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const route = routes[path];
    const count = (seen.get(path) ?? 0) + 1;
    seen.set(path, count);
    const record: RecordedRequest = {
      method: req.method ?? '',
      path,
      headers: req.headers,
      status: 0,
      sentBytes: 0,
    };
    requests.push(record);
    const answer = (status: number, headers: Record<string, string | number> = {}): void => {
      record.status = status;
      res.writeHead(status, headers);
    };
    if (!route) {
      answer(404);
      res.end();
      return;
    }
    if (route.redirectTo !== undefined) {
      answer(302, { location: route.redirectTo });
      res.end();
      return;
    }
    if (route.status !== undefined && (route.failTimes === undefined || count <= route.failTimes)) {
      answer(route.status, { 'content-type': 'text/plain' });
      res.end('no');
      return;
    }
    const body = route.body ?? Buffer.alloc(0);
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    let start = 0;
    if (range && !route.ignoreRange) {
      start = Number(range[1]);
      if (start >= body.length) {
        answer(416, { 'content-range': `bytes */${body.length}` });
        res.end();
        return;
      }
      answer(206, {
        'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
        'content-length': body.length - start,
      });
    } else {
      answer(200, { 'content-length': body.length, 'accept-ranges': 'bytes' });
    }
    let data = body.subarray(start);
    const cut = count === 1 ? route.cutFirstAfter : undefined;
    if (cut !== undefined) data = data.subarray(0, cut);
    void sendChunks(res, data, route.chunkBytes ?? 64 * 1024, route.chunkDelayMs ?? 0, (n) => {
      record.sentBytes += n;
    }).then(() => {
      if (cut !== undefined) res.socket?.destroy();
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    bodyRequests: (path) => requests.filter((r) => r.path === path && r.sentBytes > 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function sendChunks(
  res: import('node:http').ServerResponse,
  data: Buffer,
  chunkBytes: number,
  delayMs: number,
  onSent: (n: number) => void,
): Promise<void> {
  for (let i = 0; i < data.length; i += chunkBytes) {
    const chunk = data.subarray(i, i + chunkBytes);
    await new Promise<void>((resolve) => res.write(chunk, () => resolve()));
    onSent(chunk.length);
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  }
}

const exec = promisify(execFile);

/**
 * Writes a minimal valid wheel (METADATA, WHEEL, RECORD and the given files) with Python's
 * zipfile, deflated unless `stored`. Returns its path.
 */
export async function buildWheel(
  dir: string,
  name: string,
  version: string,
  files: Record<string, Buffer>,
  stored = false,
): Promise<string> {
  const dist = name.replace(/[-_.]+/g, '_');
  const wheel = join(dir, `${dist}-${version}-py3-none-any.whl`);
  const staging = await mkdtemp(join(tmpdir(), 'cs-wheel-'));
  const entries: Record<string, string> = {};
  const add = async (path: string, content: Buffer): Promise<void> => {
    const file = join(staging, `${Object.keys(entries).length}`);
    await writeFile(file, content);
    entries[path] = file;
  };
  for (const [path, content] of Object.entries(files)) await add(path, content);
  const info = `${dist}-${version}.dist-info`;
  await add(`${info}/METADATA`, Buffer.from(`Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`));
  await add(
    `${info}/WHEEL`,
    Buffer.from('Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n'),
  );
  await add(`${info}/RECORD`, Buffer.from(''));
  const script = [
    'import json, sys, zipfile',
    'out, method, entries = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])',
    'with zipfile.ZipFile(out, "w", method) as z:',
    '    for name, src in entries.items(): z.write(src, name)',
  ].join('\n');
  await exec('python3', ['-c', script, wheel, stored ? '0' : '8', JSON.stringify(entries)]);
  await removeDir(staging);
  return wheel;
}

/** Environment under which pip finds only the wheels in `dir`. */
export function pipEnvFor(dir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PIP_FIND_LINKS: dir,
    PIP_NO_INDEX: '1',
    PIP_DISABLE_PIP_VERSION_CHECK: '1',
  };
}

/**
 * Compiles the model store's sources (SWC, types stripped) into `outDir`, resolvable against the
 * repository's node_modules, so child processes can run the CLI exactly as shipped.
 */
export async function compileModelsCli(outDir: string): Promise<string> {
  // The models directory and the kit modules it imports (`../urls.js`, `../onnx/encode.js`), at the
  // same relative paths.
  const kitSrc = join(REPO_ROOT, 'services/kit/src');
  await mkdir(join(outDir, 'models'), { recursive: true });
  await mkdir(join(outDir, 'onnx'), { recursive: true });
  await writeFile(join(outDir, 'package.json'), '{"type":"module"}\n');
  await symlink(join(REPO_ROOT, 'node_modules'), join(outDir, 'node_modules'), 'dir');
  const sources = [
    ...(await readdir(join(kitSrc, 'models'))).filter((f) => f.endsWith('.ts')).map((f) => `models/${f}`),
    'urls.ts',
    'onnx/encode.ts',
  ];
  for (const file of sources) {
    const { code } = await transformFile(join(kitSrc, file), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'es6' },
      sourceMaps: false,
    });
    await writeFile(join(outDir, file.replace(/\.ts$/, '.js')), code);
  }
  return join(outDir, 'models', 'cli.js');
}
