// The OpenAPI document says every answer a route can give: the statuses the kit's own parsers and
// router answer (400 for a broken body or path, 415 for an unusable media type), a JSON answer and
// a stream on the same status side by side, each server-sent event as OpenAPI 3.1 describes one,
// and the error catalogue's body on every error status. Each case here is one the schemathesis run
// (test/fuzz) found answered but undocumented; the requests are sent to a real server to show the
// answers are what the document says.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { defineRoute, multipart, openSse } from '@clinicalsuite/kit';
import { ready, startTestServer, type TestServer } from '../helpers.js';

type Responses = Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
interface Doc {
  paths: Record<string, Record<string, { responses: Responses }>>;
}

const Chunk = z.object({ text: z.string() });

let srv: TestServer;
let doc: Doc;
const responses = (path: string, method: string): Responses => doc.paths[path]![method]!.responses;

beforeAll(async () => {
  srv = await startTestServer({
    readiness: ready(),
    routes: [
      defineRoute({
        method: 'post',
        path: '/notes',
        summary: 'JSON in, JSON or a stream out',
        body: z.object({ text: z.string(), stream: z.boolean().optional() }),
        response: z.object({ length: z.number() }),
        responses: {
          200: {
            description: 'With `stream: true`: events',
            schema: Chunk,
            contentType: 'text/event-stream',
          },
          409: { description: 'Already there' },
        },
        handler: ({ body, req, res }) => {
          if (body.stream !== true) return { length: body.text.length };
          const sse = openSse(req, res);
          void sse.send({ text: body.text }).then(() => sse.done());
          return undefined;
        },
      }),
      defineRoute({
        method: 'delete',
        path: '/notes/:id',
        summary: 'No body schema, but a body parser all the same',
        params: z.object({ id: z.string() }),
        handler: ({ params }) => ({ deleted: params.id }),
      }),
      defineRoute({
        method: 'get',
        path: '/notes/:id',
        summary: 'A path parameter',
        params: z.object({ id: z.string() }),
        handler: ({ params }) => ({ id: params.id }),
      }),
      defineRoute({
        method: 'post',
        path: '/upload',
        summary: 'A multipart upload',
        bodyParser: multipart({ files: [{ name: 'file', maxCount: 1 }], maxFileBytes: 1024 }),
        bodyContentType: 'multipart/form-data',
        body: z.object({ note: z.string().optional() }),
        handler: () => ({ ok: true }),
      }),
      defineRoute({
        method: 'get',
        path: '/plain',
        summary: 'No input at all',
        handler: () => ({ ok: true }),
      }),
    ],
  });
  doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as Doc;
});
afterAll(() => srv.close());

describe('statuses the kit answers before the handler', () => {
  it('documents 400 and 415 on every route that reads a body, and answers them', async () => {
    for (const [path, method] of [
      ['/notes', 'post'],
      ['/notes/{id}', 'delete'],
      ['/upload', 'post'],
    ] as const) {
      expect(Object.keys(responses(path, method))).toEqual(expect.arrayContaining(['400', '413', '415']));
    }
    const post = (path: string, body: string, type: string, method = 'POST') =>
      fetch(`${srv.url}${path}`, { method, headers: { 'content-type': type }, body }).then((r) => r.status);
    expect(await post('/notes', '"AAA"', 'application/json')).toBe(400);
    expect(await post('/notes', '{"text": "a"', 'application/json')).toBe(400);
    expect(await post('/notes', '{"text": "a"}', 'application/json; charset=klingon')).toBe(415);
    expect(await post('/notes/1', '{', 'application/json', 'DELETE')).toBe(400);
    expect(await post('/upload', '--x--\r\n', 'multipart/form-data; boundary=y')).toBe(400);
    expect(await post('/upload', '{}', 'application/json')).toBe(415);
  });

  it('documents 400 on a path parameter, which a broken percent-encoding gets', async () => {
    expect(Object.keys(responses('/notes/{id}', 'get'))).toContain('400');
    expect((await fetch(`${srv.url}/notes/%E0%A4%A`)).status).toBe(400);
    // Nothing to break on a route without input.
    expect(Object.keys(responses('/plain', 'get'))).not.toContain('400');
    expect(Object.keys(responses('/plain', 'get'))).not.toContain('415');
  });
});

describe('several answers on one status', () => {
  it('lists the JSON answer and the event stream side by side', async () => {
    const ok = responses('/notes', 'post')['200']!;
    expect(Object.keys(ok.content ?? {}).sort()).toEqual(['application/json', 'text/event-stream']);
    expect(ok.content!['application/json']!.schema).toMatchObject({ properties: { length: {} } });
    const json = await fetch(`${srv.url}/notes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"text":"abc"}',
    });
    expect([json.headers.get('content-type'), await json.json()]).toEqual([
      'application/json; charset=utf-8',
      { length: 3 },
    ]);
  });

  it('describes one server-sent event, its data as JSON of the route’s schema or [DONE]', async () => {
    const event = responses('/notes', 'post')['200']!.content!['text/event-stream']!.schema;
    expect(event).toMatchObject({
      type: 'object',
      required: ['data'],
      properties: { data: { type: 'string' }, event: { type: 'string' } },
      then: {
        properties: {
          data: {
            anyOf: [
              { const: '[DONE]' },
              {
                contentMediaType: 'application/json',
                contentSchema: { type: 'object', properties: { text: { type: 'string' } } },
              },
            ],
          },
        },
      },
    });
    const stream = await fetch(`${srv.url}/notes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"text":"abc","stream":true}',
    });
    expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(await stream.text()).toBe('data: {"text":"abc"}\n\ndata: [DONE]\n\n');
  });

  it('gives an error status documented without a schema the error catalogue’s body', () => {
    expect(responses('/notes', 'post')['409']).toEqual({
      description: 'Already there',
      content: {
        'application/json': { schema: expect.objectContaining({ required: ['detail'] }) as unknown },
      },
    });
  });
});
