/**
 * The model mirror the real-node tests serve on the host: the host's models directory
 * ($CLINICALSUITE_HOME/models, laid out `<dir>/<file>` as the model store fills it) over plain
 * HTTP on the node link's host address, read-only, with byte ranges (the store resumes). The
 * suite's model init containers reach it through the pod network with MODEL_MIRROR in their
 * `model.fetchEnv`; pods here reach neither PyPI, npm nor the hub, as in an air-gapped cluster.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize, sep } from 'node:path';

export interface Mirror {
  readonly url: string;
  /** Paths requested so far (GET), to show what the pods fetched. */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function serveMirror(root: string, host: string): Promise<Mirror> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://mirror').pathname);
      const file = normalize(join(root, path));
      if (!file.startsWith(root + sep) || file.endsWith('.sha256.json')) {
        res.writeHead(404).end();
        return;
      }
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile()) {
        res.writeHead(404).end();
        return;
      }
      if (req.method === 'GET') requests.push(path);
      const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      const start = range ? Number(range[1]) : 0;
      if (start > info.size) {
        res.writeHead(416, { 'content-range': `bytes */${info.size}` }).end();
        return;
      }
      const headers = { 'content-length': String(info.size - start), 'accept-ranges': 'bytes' };
      if (range) {
        res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${info.size - 1}/${info.size}` });
      } else {
        res.writeHead(200, headers);
      }
      if (req.method === 'HEAD') res.end();
      else createReadStream(file, { start }).pipe(res);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
