import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import {
  createKit,
  defineRoute,
  healthRoute,
  openSse,
  serviceAuth,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import type { EchoConfig } from './config.js';

export interface EchoDeps {
  readonly config: EchoConfig;
  readonly logger?: Logger;
}

const EchoRequest = z.object({
  text: z.string().min(1).max(1000),
  times: z.number().int().min(1).max(10).default(1),
});
const EchoResponse = z.object({ echo: z.string() });
const Health = z.object({ ready: z.boolean(), reason: z.string().nullable() });

/** The app, not listening: `serve(kit)` listens, then opens the greeting. */
export function buildEchoApp(deps: EchoDeps): { kit: KitApp } {
  const { config } = deps;
  // 1. The parts: logger, readiness, gate, metrics, GPU reader, bearer auth.
  const kit = createKit({
    service: 'echo',
    title: 'Echo example',
    version: '0.1.0',
    config,
    auth: serviceAuth(config, { scope: 'echo', tokenEnv: 'ECHO_API_TOKEN', token: config.ECHO_API_TOKEN }),
    ...(deps.logger === undefined ? {} : { logger: deps.logger }),
  });

  // 2. What it opens: read after listening, retried until the file can be read.
  const greeting = kit.resource({
    name: 'the greeting',
    open: async ({ signal }) => {
      const text = await readFile(config.ECHO_GREETING_FILE, { encoding: 'utf8', signal });
      return text.split('\n')[0]?.trim() ?? '';
    },
    retry: { firstPauseMs: 100, maxPauseMs: 2000 },
  });
  // require(): the value, or 503 naming why there is none yet.
  const echo = (text: string, times: number): string =>
    [greeting.require(), ...Array<string>(times).fill(text)].join(' ');

  // 3. The routes, mounted last.
  return {
    kit: kit.mount([
      healthRoute({
        readiness: kit.readiness,
        schema: Health,
        auth: false,
        body: (ready, reason) => ({ ready, reason: reason ?? null }),
      }),
      defineRoute({
        method: 'post',
        path: '/echo',
        summary: 'The greeting, then the text `times` times',
        body: EchoRequest,
        response: EchoResponse,
        handler: ({ body }) => ({ echo: echo(body.text, body.times) }),
      }),
      defineRoute({
        method: 'post',
        path: '/echo/stream',
        summary: 'The same echo, one word per server-sent event',
        body: EchoRequest,
        responses: {
          200: {
            description: '`data: {"word": …}` events, then `data: [DONE]`',
            contentType: 'text/event-stream',
          },
        },
        handler: async ({ req, res, body }) => {
          const words = echo(body.text, body.times).split(' ');
          const sse = openSse(req, res);
          for (const word of words) {
            if (sse.signal.aborted) return; // the client left, or the deadline passed
            await sse.send({ word });
          }
          sse.done();
        },
      }),
    ]),
  };
}
