import { createRequire } from 'node:module';
import express, { type Router } from 'express';
import { z } from 'zod';
import type { AnyRoute } from './route.js';
import { isGated, parsesBody } from './route.js';
import type { ErrorShape } from './render-error.js';

/**
 * OpenAPI 3.1 from the routes' zod schemas (JSON Schema 2020-12 is OpenAPI 3.1's dialect, so
 * zod's own converter does the work), and an interactive page at `/docs` built from swagger-ui's
 * npm package: nothing is fetched from a CDN, so it works offline and inside a closed cluster.
 */

export interface OpenApiInfo {
  readonly title: string;
  readonly version: string;
  readonly description?: string;
  readonly errorShape: ErrorShape;
  readonly authenticated: boolean;
}

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete out['$schema'];
  return out;
}

const issueSchema = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});
const openaiErrorSchema = z.object({
  error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string() }),
});
const detailErrorSchema = z.object({ detail: z.union([z.string(), z.array(issueSchema)]) });
const envelopeErrorSchema = z.object({
  success: z.literal(false),
  message: z.string(),
  errors: z.array(issueSchema).optional(),
});

function errorSchemaFor(path: string, shape: ErrorShape): z.ZodType {
  if (path.startsWith('/v1/')) return openaiErrorSchema;
  return shape === 'envelope' ? envelopeErrorSchema : detailErrorSchema;
}

const json = (schema: JsonSchema) => ({ 'application/json': { schema } });

const SSE = 'text/event-stream';

/**
 * A `text/event-stream` answer as OpenAPI 3.1 reads it: the schema describes one event (its
 * `event`, `data`, `id` and `retry` fields), so the route's schema is that of the JSON in `data`
 * (`contentSchema`); the last event's data is `[DONE]`. Named events (`event: error`, the agent's
 * `event: data`) carry JSON of their own and are only said to be text.
 */
function sseEvent(data: JsonSchema | undefined): JsonSchema {
  return {
    description:
      'One server-sent event. Unnamed events carry JSON (`contentSchema`) and the last one `[DONE]`; ' +
      'named events (`error`) carry their own JSON.',
    type: 'object',
    properties: {
      event: { type: 'string' },
      data: { type: 'string' },
      id: { type: 'string' },
      retry: { type: 'integer', minimum: 0 },
    },
    required: ['data'],
    ...(data === undefined
      ? {}
      : {
          if: { properties: { event: { const: 'message' } } },
          then: {
            properties: {
              data: {
                anyOf: [{ const: '[DONE]' }, { contentMediaType: 'application/json', contentSchema: data }],
              },
            },
          },
        }),
  };
}

function parameters(schema: z.ZodType | undefined, where: 'query' | 'path'): unknown[] {
  if (schema === undefined) return [];
  const s = jsonSchema(schema, 'input');
  const props = (s['properties'] ?? {}) as Record<string, JsonSchema>;
  const required = new Set((s['required'] ?? []) as string[]);
  return Object.entries(props).map(([name, prop]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    ...(typeof prop['description'] === 'string' ? { description: prop['description'] } : {}),
    schema: prop,
  }));
}

function operation(route: AnyRoute, info: OpenApiInfo): Record<string, unknown> {
  const errorBody = json(jsonSchema(errorSchemaFor(route.path, info.errorShape), 'output'));
  const responses: Record<string, { description: string; content?: Record<string, unknown> }> = {
    [String(route.status ?? 200)]: {
      description: 'Success',
      ...(route.response ? { content: json(jsonSchema(route.response, 'output')) } : {}),
    },
  };
  // A status documented twice (a JSON answer and, with `stream: true`, server-sent events) lists
  // both media types; an error status documented without a schema has the error catalogue's body.
  for (const [status, doc] of Object.entries(route.responses ?? {})) {
    const type = doc.contentType ?? 'application/json';
    const data = doc.schema ? jsonSchema(doc.schema, 'output') : undefined;
    const content =
      type === SSE
        ? { [SSE]: { schema: sseEvent(data) } }
        : data
          ? { [type]: { schema: data } }
          : Number(status) >= 400
            ? errorBody
            : undefined;
    const known = responses[status];
    responses[status] =
      known === undefined
        ? { description: doc.description, ...(content ? { content } : {}) }
        : {
            description: `${known.description}. ${doc.description}`,
            ...(known.content || content ? { content: { ...known.content, ...content } } : {}),
          };
  }
  const body = parsesBody(route);
  const standard: [number, string, boolean][] = [
    [
      400,
      'Malformed request: a body that is not valid JSON or multipart, or a path parameter that is not valid UTF-8',
      body || route.path.includes(':'),
    ],
    [401, 'Missing or invalid bearer token', info.authenticated && route.auth !== false],
    [413, 'Request body too large', body],
    [415, 'Unsupported media type, charset or Content-Encoding of the body', body],
    [
      route.validationStatus ?? 422,
      'Validation failed; lists the failing fields',
      Boolean(route.body ?? route.query ?? route.params),
    ],
    [429, 'Too many requests in work and waiting; see Retry-After', isGated(route)],
    [503, 'Service not ready (model loading)', (route.requiresReady ?? isGated(route)) !== false],
    [504, 'Request deadline exceeded; the work was stopped', isGated(route)],
    [500, 'Internal error', true],
  ];
  for (const [status, description, applies] of standard) {
    if (applies && responses[status] === undefined) responses[status] = { description, content: errorBody };
  }
  return {
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(route.tags ? { tags: route.tags } : {}),
    operationId: `${route.method}${route.path.replace(/[^a-zA-Z0-9]+(.)?/g, (_m, c?: string) => (c ?? '').toUpperCase())}`,
    parameters: [
      ...parameters(route.params as z.ZodType | undefined, 'path'),
      ...parameters(route.query as z.ZodType | undefined, 'query'),
    ],
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: {
              [route.bodyContentType ?? 'application/json']: {
                schema: jsonSchema(route.body as z.ZodType, 'input'),
              },
            },
          },
        }
      : {}),
    responses,
    ...(info.authenticated && route.auth !== false ? {} : { security: [] }),
  };
}

export function buildOpenApiDocument(
  routes: readonly AnyRoute[],
  info: OpenApiInfo,
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    paths[path] = { ...paths[path], [route.method]: operation(route, info) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      ...(info.description ? { description: info.description } : {}),
    },
    paths,
    components: info.authenticated ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } } : {},
    ...(info.authenticated ? { security: [{ bearer: [] }] } : {}),
  };
}

const require = createRequire(import.meta.url);

/** `/docs` (the page), `/docs/assets/*` (swagger-ui from node_modules). */
export function docsRouter(title: string): Router {
  const router = express.Router();
  const assets = (require('swagger-ui-dist') as { getAbsoluteFSPath(): string }).getAbsoluteFSPath();
  router.use('/docs/assets', express.static(assets, { index: false, maxAge: '1h' }));
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(DOCS_INIT);
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(docsPage(title));
  });
  return router;
}

const DOCS_INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true,
    persistAuthorization: false, tryItOutEnabled: true });
});
`;

function docsPage(title: string): string {
  const safe = title.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${safe} — API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;
}
