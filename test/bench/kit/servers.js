// Two servers in one process for the kit benchmark: a bare Express 5 handler and the same handler
// built with the kit (request id, logs at info, metrics, auth, validation, gate, deadline).
// Prints the two ports as one JSON line, then serves until killed.
import { Writable } from 'node:stream';
import express from 'express';
import { z } from 'zod';
import {
  buildApp,
  createLogger,
  defineRoute,
  kitConfigSchema,
  loadConfig,
  Readiness,
  serve,
  TokenStore,
} from '@clinicalsuite/kit';

const limit = Number(process.env.BENCH_LIMIT ?? '4');
const body = z.object({ prompt: z.string(), max_tokens: z.number().int().min(1).max(4096).default(16) });
const work = (b) => ({ response: b.prompt.length, max_tokens: b.max_tokens ?? 16 });

const bare = express();
bare.use(express.json({ limit: '10mb' }));
bare.post('/v1/echo', (req, res) => {
  res.json(work(req.body));
});
const bareServer = bare.listen(0, '127.0.0.1');
await new Promise((r) => bareServer.once('listening', r));

// Logs go through pino's real serialization into a sink, as they would to stdout.
const sink = new Writable({ write: (_c, _e, done) => done() });
const config = loadConfig(kitConfigSchema({ port: 0, maxConcurrency: limit }), {
  HOST: '127.0.0.1',
  NVIDIA_SMI_PATH: '/nonexistent',
  QUEUE_SIZE: '1000',
  BODY_LIMIT: '10mb',
});
const readiness = new Readiness();
readiness.setReady();
const kit = buildApp({
  service: 'bench',
  title: 'bench',
  version: '0',
  config,
  readiness,
  logger: createLogger({ service: 'bench', level: process.env.BENCH_LOG_LEVEL ?? 'info', destination: sink }),
  auth: { tokens: new TokenStore({ tokens: [{ token: 'bench-token', scopes: [] }] }) },
  routes: [
    defineRoute({
      method: 'post',
      path: '/v1/echo',
      summary: 'echo',
      body,
      handler: ({ body: b }) => work(b),
    }),
  ],
});
const running = await serve(kit, { signals: [] });
process.stdout.write(`${JSON.stringify({ bare: bareServer.address().port, kit: running.port })}\n`);
process.on('SIGTERM', () => process.exit(0));
