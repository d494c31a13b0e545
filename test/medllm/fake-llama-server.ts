import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// The fake backend: llama-server's routes (/health, /apply-template, /tokenize,
// /v1/chat/completions) plus /_received, what it was sent. Tokens are whitespace-separated words;
// each image costs FAKE_IMAGE_TOKENS. Replies depend on markers in the last user text: CERTAIN
// (an unhedged claim), SLOW (a long slow stream), ENGINE_ERROR (llama-server's 500).
export const FAKE_IMAGE_TOKENS = 64;
const FAKE_SERVER = String.raw`#!/usr/bin/env node
const http = require('node:http');
const crypto = require('node:crypto');
const args = process.argv.slice(2);
const arg = (name) => args[args.indexOf(name) + 1];
const port = Number(arg('--port'));
const alias = arg('--alias');
const started = Date.now();
const LOAD_MS = Number(process.env.FAKE_LOAD_MS || 150);
const received = [];
let aborted = 0;
const words = (text) => text.split(/\s+/).filter(Boolean).length;
const textOf = (content) =>
  typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '<image>')).join('\n');
const template = (messages) => messages.map((m) => '<|' + m.role + '|> ' + textOf(m.content)).join('\n') + ' <|assistant|>';
const readBody = (req) => new Promise((resolve) => { const parts = []; req.on('data', (d) => parts.push(d)); req.on('end', () => resolve(Buffer.concat(parts).toString())); });
const json = (res, status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
console.error('fake llama-server: loading model ' + arg('--model') + ' and projector ' + arg('--mmproj'));
http.createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    if (Date.now() - started < LOAD_MS) return json(res, 503, { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
    return json(res, 200, { status: 'ok' });
  }
  if (req.url === '/_received') return json(res, 200, { received, aborted });
  const body = JSON.parse(await readBody(req));
  if (req.url === '/apply-template') return json(res, 200, { prompt: template(body.messages) });
  if (req.url === '/tokenize') return json(res, 200, { tokens: Array.from({ length: words(body.content) + 1 }, (_, i) => i) });
  if (req.url !== '/v1/chat/completions') return json(res, 404, { error: { code: 404, message: 'not found' } });
  let images = 0;
  const messages = body.messages.map((m) => ({
    role: m.role,
    text: textOf(m.content),
    images: typeof m.content === 'string' ? [] : m.content.filter((p) => p.type === 'image_url').map((p) => {
      images += 1;
      const [, mime, data] = /^data:([^;]+);base64,(.*)$/s.exec(p.image_url.url);
      const bytes = Buffer.from(data, 'base64');
      return { mime, bytes: bytes.length, sha256: crypto.createHash('sha256').update(bytes).digest('hex') };
    }),
  }));
  received.push({ model: body.model, temperature: body.temperature, top_p: body.top_p, max_tokens: body.max_tokens, stream: body.stream, messages });
  const last = messages.filter((m) => m.role === 'user').pop().text;
  if (last.includes('ENGINE_ERROR')) return json(res, 500, { error: { code: 500, message: 'failed to process image', type: 'server_error' } });
  const textOnly = body.messages.map((m) => ({ role: m.role, content: textOf(m.content).replace(/<image>/g, '') }));
  const promptTokens = words(template(textOnly)) + 1 + images * ${FAKE_IMAGE_TOKENS};
  let pieces = last.includes('CERTAIN') ? ['This ', 'is ', 'definitely ', 'pneumonia.']
    : last.includes('SLOW') ? Array.from({ length: 2000 }, () => 'word ')
    : ['I ', 'see ', String(images) + ' ', 'image(s).'];
  let finish = 'stop';
  if (pieces.length > body.max_tokens) { pieces = pieces.slice(0, body.max_tokens); finish = 'length'; }
  const usage = { prompt_tokens: promptTokens, completion_tokens: pieces.length, total_tokens: promptTokens + pieces.length };
  const base = { id: 'chatcmpl-fake', created: Math.floor(Date.now() / 1000), model: alias, object: 'chat.completion.chunk' };
  if (!body.stream) {
    return json(res, 200, { ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: pieces.join('') }, finish_reason: finish }], usage });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let closed = false;
  res.on('close', () => { if (!res.writableFinished) { closed = true; aborted += 1; } });
  const delay = last.includes('SLOW') ? 30 : 2;
  for (const piece of pieces) {
    if (closed) return;
    res.write('data: ' + JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] }) + '\n\n');
    await new Promise((r) => setTimeout(r, delay));
  }
  res.write('data: ' + JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] }) + '\n\n');
  if (body.stream_options && body.stream_options.include_usage) res.write('data: ' + JSON.stringify({ ...base, choices: [], usage }) + '\n\n');
  res.end('data: [DONE]\n\n');
}).listen(port, arg('--host'));
`;

/** Writes the fake as an executable `llama-server` in `dir` (run by this Node) and returns its path. */
export function writeFakeLlamaServer(dir: string): string {
  const binary = join(dir, 'llama-server');
  writeFileSync(binary, FAKE_SERVER.replace('#!/usr/bin/env node', `#!${process.execPath}`));
  chmodSync(binary, 0o755);
  return binary;
}
