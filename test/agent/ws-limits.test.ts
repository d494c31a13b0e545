import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { AGENT_TOKEN, startAgent, type AgentTestServer } from './helpers.js';

// WS /ws/chat against sockets that never authenticate: a cap per client address and in all on the
// sockets still waiting for their auth frame (1013 past it), a short auth deadline (1008), and
// clients with a token still served. Client addresses are distinct loopback addresses
// (127.0.0.2, 127.0.0.3, ...), which Linux routes to the server like any other.

let agent: AgentTestServer;
beforeAll(async () => {
  // No LLM is needed to authenticate a socket.
  agent = await startAgent(
    {
      LLM_URL: 'http://127.0.0.1:9',
      AGENT_WS_MAX_PENDING_PER_IP: '3',
      AGENT_WS_MAX_PENDING: '5',
      AGENT_WS_AUTH_TIMEOUT_MS: '1500',
    },
    { waitReady: false },
  );
});
afterAll(() => agent.close());

const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  // The server frees their places as it sees them close.
  await new Promise((r) => setTimeout(r, 100));
});

const wsUrl = (query = ''): string => `${agent.url.replace(/^http/, 'ws')}/ws/chat${query}`;

/** Frames a socket received, kept from the moment it is created (one may come with the handshake). */
const received = new WeakMap<WebSocket, unknown[]>();
/** How each socket closed, watched from the moment it is created. */
const closes = new WeakMap<WebSocket, Promise<{ code: number; reason: string }>>();

/** A socket from `from`, opened (it rejects when the handshake fails). */
async function open(from: string, query = ''): Promise<WebSocket> {
  const ws = new WebSocket(wsUrl(query), { localAddress: from });
  sockets.push(ws);
  const frames: unknown[] = [];
  received.set(ws, frames);
  ws.on('message', (data: WebSocket.RawData) => frames.push(JSON.parse((data as Buffer).toString('utf8'))));
  closes.set(
    ws,
    new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    ),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return ws;
}

/** How the socket was closed, or null when it is still open after `ms`. */
function closedWithin(ws: WebSocket, ms: number): Promise<{ code: number; reason: string } | null> {
  const closed = closes.get(ws);
  if (closed === undefined) throw new Error('not a socket of open()');
  return Promise.race([closed, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms))]);
}

/** The socket's first frame, once it has one. */
async function firstFrame(ws: WebSocket): Promise<unknown> {
  const frames = received.get(ws) ?? [];
  for (let i = 0; i < 200 && frames.length === 0; i++) {
    if (ws.readyState === WebSocket.CLOSED) throw new Error('closed before a frame');
    await new Promise((r) => setTimeout(r, 10));
  }
  return frames[0];
}

async function authenticate(ws: WebSocket): Promise<unknown> {
  ws.send(JSON.stringify({ type: 'auth', token: AGENT_TOKEN }));
  return firstFrame(ws);
}

describe('sockets waiting for authentication', () => {
  it('refuses one address past its cap with 1013, while a token client and other addresses connect', async () => {
    const waiting = [];
    for (let i = 0; i < 3; i++) waiting.push(await open('127.0.0.2'));
    const refused = await open('127.0.0.2');
    const closed = await closedWithin(refused, 1000);
    expect(closed?.code).toBe(1013);
    expect(closed?.reason).toMatch(/too many unauthenticated sockets from this address/);
    for (const ws of waiting) expect(ws.readyState).toBe(WebSocket.OPEN);

    // The same address with the token in the query is not waiting for anything: served.
    const withToken = await open('127.0.0.2', `?token=${AGENT_TOKEN}`);
    expect(await firstFrame(withToken)).toEqual({ type: 'auth_ok' });
    // Another address authenticates with a frame.
    expect(await authenticate(await open('127.0.0.3'))).toEqual({ type: 'auth_ok' });

    // One of the waiting sockets authenticates: its place is free for another.
    expect(await authenticate(waiting[0]!)).toEqual({ type: 'auth_ok' });
    const next = await open('127.0.0.2');
    expect(await closedWithin(next, 300)).toBeNull();
  });

  it('refuses any address past the cap on all waiting sockets', async () => {
    for (let i = 0; i < 3; i++) await open('127.0.0.4');
    for (let i = 0; i < 2; i++) await open('127.0.0.5');
    const refused = await open('127.0.0.6');
    const closed = await closedWithin(refused, 1000);
    expect(closed?.code).toBe(1013);
    expect(closed?.reason).toMatch(/too many unauthenticated sockets: try again later/);
    const withToken = await open('127.0.0.6', `?token=${AGENT_TOKEN}`);
    expect(await firstFrame(withToken)).toEqual({ type: 'auth_ok' });
    const metrics = await (await fetch(`${agent.url}/metrics`)).text();
    expect(metrics).toMatch(/agent_websocket_auth_failures_total\{reason="pending_total"[^}]*\} [1-9]/);
  });

  it('closes a socket that does not authenticate within AGENT_WS_AUTH_TIMEOUT_MS (1008), freeing its place', async () => {
    const silent = [];
    for (let i = 0; i < 3; i++) silent.push(await open('127.0.0.7'));
    const started = performance.now();
    for (const ws of silent) {
      const closed = await closedWithin(ws, 5000);
      expect(closed).toEqual({ code: 1008, reason: expect.stringMatching(/authentication required/) });
    }
    expect(performance.now() - started).toBeLessThan(3000);
    expect(await closedWithin(await open('127.0.0.7'), 300)).toBeNull();
  });
});
