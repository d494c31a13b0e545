import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { defineRoute, multipart, uploadedFiles } from '@clinicalsuite/kit';
import { ready, startTestServer, type TestServer } from '../helpers.js';

const diskDir = mkdtempSync(join(tmpdir(), 'kit-multipart-'));
let srv: TestServer;
let seenPaths: string[] = [];

beforeAll(async () => {
  srv = await startTestServer({
    errorShape: 'envelope',
    readiness: ready(),
    routes: [
      defineRoute({
        method: 'post',
        path: '/upload',
        summary: 'memory',
        body: z.object({
          person_name: z.string().min(1),
          threshold: z.coerce.number().min(0).max(1).default(0.4),
        }),
        bodyParser: multipart({ files: [{ name: 'files', maxCount: 3 }], maxFileBytes: 1024 }),
        bodyContentType: 'multipart/form-data',
        handler: ({ body, req }) => ({
          success: true,
          message: 'ok',
          data: {
            ...body,
            files: uploadedFiles(req, 'files').map((f) => ({
              name: f.originalname,
              size: f.size,
              bytes: f.buffer?.length,
            })),
          },
        }),
      }),
      defineRoute({
        method: 'post',
        path: '/whole',
        summary: 'limited as a whole',
        bodyParser: multipart({
          files: [{ name: 'files', maxCount: 3 }],
          maxFileBytes: 1024,
          maxBodyBytes: 1536,
        }),
        handler: ({ req }) => ({
          success: true,
          message: 'ok',
          data: { files: uploadedFiles(req, 'files').length },
        }),
      }),
      defineRoute({
        method: 'post',
        path: '/fields',
        summary: 'fields only',
        bodyParser: multipart({ files: [], maxFileBytes: 1 }),
        handler: () => ({ success: true, message: 'ok', data: {} }),
      }),
      defineRoute({
        method: 'post',
        path: '/video',
        summary: 'disk',
        bodyParser: multipart({
          files: [{ name: 'file', maxCount: 1 }],
          maxFileBytes: 4096,
          storage: 'disk',
          dir: diskDir,
        }),
        handler: ({ req }) => {
          const [file] = uploadedFiles(req, 'file');
          seenPaths = file?.path === undefined ? [] : [file.path];
          return {
            success: true,
            message: 'ok',
            data: { exists: file?.path !== undefined && existsSync(file.path) },
          };
        },
      }),
    ],
  });
});
afterAll(() => srv.close());

function form(
  fields: Record<string, string>,
  files: { field: string; name: string; size: number }[],
): FormData {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.append(k, v);
  for (const f of files)
    data.append(f.field, new Blob([Buffer.alloc(f.size, 7)], { type: 'image/png' }), f.name);
  return data;
}

describe('multipart', () => {
  it('parses fields (coerced by the route schema) and files by field', async () => {
    const res = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      body: form({ person_name: 'Lan', threshold: '0.6' }, [
        { field: 'files', name: 'a.png', size: 10 },
        { field: 'files', name: 'b.png', size: 20 },
      ]),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      success: true,
      message: 'ok',
      data: {
        person_name: 'Lan',
        threshold: 0.6,
        files: [
          { name: 'a.png', size: 10, bytes: 10 },
          { name: 'b.png', size: 20, bytes: 20 },
        ],
      },
    });
  });

  it('reads file names as UTF-8, as browsers and fetch send them, and RFC 5987 names too', async () => {
    const names = ['ảnh_Nguyễn.jpg', 'café.png', 'x-ray "left" 50%.png'];
    const res = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      body: form(
        { person_name: 'Nguyễn Văn A' },
        names.map((name) => ({ field: 'files', name, size: 1 })),
      ),
    });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { person_name: string; files: { name: string }[] } };
    expect(data.person_name).toBe('Nguyễn Văn A');
    expect(data.files.map((f) => f.name)).toEqual(names);

    // A client that names the charset (filename*=UTF-8''…) gets the same name.
    const boundary = 'kit-test-boundary';
    const raw = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="person_name"\r\n\r\nLan\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="files"; ` +
          `filename*=UTF-8''${encodeURIComponent('ảnh_Nguyễn.jpg')}\r\nContent-Type: image/jpeg\r\n\r\n`,
      ),
      Buffer.from([1, 2, 3]),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const extended = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: raw,
    });
    expect(((await extended.json()) as { data: { files: { name: string }[] } }).data.files).toEqual([
      { name: 'ảnh_Nguyễn.jpg', size: 3, bytes: 3 },
    ]);
  });

  it('answers 413 for a file over the limit, 400 for too many files, 415 for a JSON body, 422 for a missing field', async () => {
    const big = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      body: form({ person_name: 'Lan' }, [{ field: 'files', name: 'big.png', size: 2048 }]),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ success: false, message: expect.stringContaining('1 KB') });

    const many = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      body: form(
        { person_name: 'Lan' },
        [1, 2, 3, 4].map((i) => ({ field: 'files', name: `${String(i)}.png`, size: 1 })),
      ),
    });
    expect(many.status).toBe(400);
    expect(((await many.json()) as { message: string }).message).toContain('`files` (at most 3)');

    const wrongField = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      body: form({ person_name: 'Lan' }, [{ field: 'image', name: 'x.png', size: 1 }]),
    });
    expect(wrongField.status).toBe(400);

    // A form that takes no files says so (the list of accepted fields would be empty).
    const fieldsOnly = await fetch(`${srv.url}/fields`, {
      method: 'POST',
      body: form({ action: 'list' }, [{ field: 'file', name: 'x.gif', size: 1 }]),
    });
    expect(fieldsOnly.status).toBe(400);
    expect(((await fieldsOnly.json()) as { message: string }).message).toBe(
      'This form takes no files: send its fields only',
    );

    const json = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ person_name: 'Lan' }),
    });
    expect(json.status).toBe(415);

    const compressed = await fetch(`${srv.url}/upload`, {
      method: 'POST',
      headers: { 'content-encoding': 'gzip' },
      body: form({ person_name: 'Lan' }, []),
    });
    expect(compressed.status).toBe(415);
    expect(((await compressed.json()) as { message: string }).message).toBe(
      'Send multipart/form-data uncompressed (Content-Encoding: gzip)',
    );

    const missing = await fetch(`${srv.url}/upload`, { method: 'POST', body: form({}, []) });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { message: string }).message).toContain('person_name');
  });

  it('limits the body as a whole with maxBodyBytes (413), declared or chunked, each file under its own limit', async () => {
    const two = form({}, [
      { field: 'files', name: 'a.png', size: 1000 },
      { field: 'files', name: 'b.png', size: 1000 },
    ]);
    const declared = await fetch(`${srv.url}/whole`, { method: 'POST', body: two });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { message: string }).message).toBe(
      'Request body exceeds the limit of 1536 bytes',
    );
    const encoded = new Response(two);
    const bytes = new Uint8Array(await encoded.arrayBuffer());
    const chunked = await fetch(`${srv.url}/whole`, {
      method: 'POST',
      headers: { 'content-type': encoded.headers.get('content-type')! },
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 256) controller.enqueue(bytes.subarray(i, i + 256));
          controller.close();
        },
      }),
      duplex: 'half',
    });
    expect(chunked.status).toBe(413);
    const one = await fetch(`${srv.url}/whole`, {
      method: 'POST',
      body: form({}, [{ field: 'files', name: 'a.png', size: 1000 }]),
    });
    expect(one.status).toBe(200);
    expect(await one.json()).toMatchObject({ data: { files: 1 } });
  });

  it('documents the body under its media type in OpenAPI', async () => {
    const doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
    };
    const content = doc.paths['/upload']?.['post']?.requestBody?.content ?? {};
    expect(Object.keys(content)).toEqual(['multipart/form-data']);
    expect(content['multipart/form-data']).toMatchObject({
      schema: { properties: { person_name: { type: 'string' } }, required: ['person_name'] },
    });
  });

  it('writes disk uploads to the directory and deletes them when the response ends', async () => {
    const res = await fetch(`${srv.url}/video`, {
      method: 'POST',
      body: form({}, [{ field: 'file', name: 'clip.mp4', size: 100 }]),
    });
    expect(await res.json()).toMatchObject({ data: { exists: true } });
    expect(seenPaths[0]?.startsWith(diskDir)).toBe(true);
    for (let i = 0; i < 50 && readdirSync(diskDir).length > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(readdirSync(diskDir)).toEqual([]);

    const big = await fetch(`${srv.url}/video`, {
      method: 'POST',
      body: form({}, [{ field: 'file', name: 'big.mp4', size: 8192 }]),
    });
    expect(big.status).toBe(413);
    for (let i = 0; i < 50 && readdirSync(diskDir).length > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(readdirSync(diskDir)).toEqual([]);
  });
});
