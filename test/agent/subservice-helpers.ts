import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CodeStore } from '../../services/codesearch/src/adapters/code-store.js';
import { importCodeSet } from '../../services/codesearch/src/adapters/importer.js';
import { startCodesearch, type CodesearchTestServer } from '../codesearch/helpers.js';
import { auth as llmAuth } from '../llm/helpers.js';
import { ensureLibrivox } from '../stt/fixtures.js';
import { AGENT_TOKEN } from './helpers.js';

/**
 * Starting the agent's real sub-services for its tests, and the inputs they need. Each service is
 * started by its own test helper (test/<service>/helpers.ts); this file adds what the agent's tests
 * share: a small real ICD-10-CM set for the code search, speech with a known transcript, servers that
 * refuse or never answer, and multipart requests to the agent.
 */

/**
 * Real ICD-10-CM codes and titles (CMS tabular list, April 2026; U.S. public domain), the ones the
 * test notes mention plus neighbours. The code search adds its curated Vietnamese titles to those it
 * knows (tăng huyết áp, đái tháo đường, viêm phổi...).
 */
export const ICD_SLICE: readonly (readonly [string, string, string | null])[] = [
  ['I10', 'Essential (primary) hypertension', null],
  ['E11', 'Type 2 diabetes mellitus', null],
  ['E11.9', 'Type 2 diabetes mellitus without complications', 'E11'],
  ['I21', 'Acute myocardial infarction', null],
  ['I21.4', 'Non-ST elevation (NSTEMI) myocardial infarction', 'I21'],
  ['I24.9', 'Acute ischemic heart disease, unspecified', null],
  ['J13', 'Pneumonia due to Streptococcus pneumoniae', null],
  ['J18.9', 'Pneumonia, unspecified organism', null],
  ['J44', 'Other chronic obstructive pulmonary disease', null],
  ['J44.9', 'Chronic obstructive pulmonary disease, unspecified', 'J44'],
  ['K29.70', 'Gastritis, unspecified, without bleeding', null],
  ['R05', 'Cough', null],
  ['R05.9', 'Cough, unspecified', 'R05'],
  ['R07.9', 'Chest pain, unspecified', null],
  ['R50.9', 'Fever, unspecified', null],
];

/** The code search on ICD_SLICE only (lexical: no embedding model), imported with its own importer. */
export async function startCodesearchSlice(): Promise<CodesearchTestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-codesearch-'));
  const file = join(dataDir, 'icd10-slice.csv');
  const csv = ['code,title_en,parent', ...ICD_SLICE.map(([c, t, p]) => `${c},"${t}",${p ?? ''}`)].join('\n');
  writeFileSync(file, csv);
  const imported = await importCodeSet(new CodeStore(dataDir), {
    type: 'ICD10',
    file,
    source: 'ICD-10-CM April 2026 (slice for the agent tests)',
  });
  if (!imported.ok) throw new Error(`import failed: ${JSON.stringify(imported.errors)}`);
  return startCodesearch({
    DATA_DIR: dataDir,
    CODESEARCH_BUILTIN_SETS: 'false',
    CODESEARCH_EMBEDDINGS: 'off',
    CODESEARCH_RELOAD_POLL_MS: '0',
  });
}

export interface Speech {
  readonly wav: Buffer;
  readonly name: string;
  /** What is said (lower case, no punctuation). */
  readonly transcript: string;
  readonly seconds: number;
}

/** Real English speech (LibriVox, public domain) with its transcript: `short` 3.0 s, `long` 7.1 s. */
export async function librivoxSpeech(): Promise<{ short: Speech; long: Speech }> {
  const rec = await ensureLibrivox();
  const speech = (id: '0880' | '0870', seconds: number): Speech => ({
    wav: readFileSync(rec[id].wav),
    name: `librivox-${id}.wav`,
    transcript: rec[id].transcript,
    seconds,
  });
  return { short: speech('0880', 2.99), long: speech('0870', 7.1) };
}

/** `seconds` of digital silence as a 16 kHz mono 16-bit WAV. */
export function silentWav(seconds: number): Buffer {
  const samples = Math.round(16_000 * seconds);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + samples * 2, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(16_000, 24);
  header.writeUInt32LE(32_000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(samples * 2, 40);
  return Buffer.concat([header, Buffer.alloc(samples * 2)]);
}

export interface BlackHole {
  readonly url: string;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  /** Connections the other side has closed. */
  readonly closedByPeer: () => number;
  close(): Promise<void>;
}

/** A server that accepts connections and never answers (a hung sub-service). */
export async function blackHole(): Promise<BlackHole> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let closed = 0;
  const server = createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('data', () => undefined);
    socket.on('end', () => {
      closed += 1;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    accepted: () => accepted,
    closedByPeer: () => closed,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface Part {
  readonly bytes: Buffer;
  readonly name: string;
  readonly type?: string;
}

/** A multipart POST to the agent (token by default), its JSON body typed as the test expects it. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the body's shape
export async function agentForm<T = Record<string, unknown>>(
  url: string,
  files: Readonly<Record<string, Part>>,
  fields: Readonly<Record<string, string>> = {},
  init: { token?: string | null; signal?: AbortSignal } = {},
): Promise<{ status: number; headers: Headers; body: T & { detail?: unknown } }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const [field, part] of Object.entries(files)) {
    form.append(field, new Blob([part.bytes], part.type === undefined ? {} : { type: part.type }), part.name);
  }
  const token = init.token === undefined ? AGENT_TOKEN : init.token;
  const res = await fetch(url, {
    method: 'POST',
    body: form,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as T & { detail?: unknown } };
}

/**
 * Puts the LLM service's one sequence in a known state: a short unrelated prompt. The engine reuses
 * the cached prefix a prompt shares with the previous one, and on the tiny random model how much was
 * reused can change the greedy reply; after a reset, the agent's call and the test's own call of the
 * same prompt start from the same cache and must answer alike. (The LLM runs with one sequence.)
 */
export async function llmReset(llmUrl: string): Promise<void> {
  await llmSays(llmUrl, [{ role: 'user', content: 'reset' }], 1, undefined, false);
}

/**
 * What the LLM service itself answers, greedy, to `messages` with `maxTokens` (the agent's
 * AGENT_MAX_TOKENS), after llmReset (unless `reset` is false).
 */
export async function llmSays(
  llmUrl: string,
  messages: readonly { role: string; content: string }[],
  maxTokens: number,
  responseFormat?: unknown,
  reset = true,
): Promise<string> {
  if (reset) await llmReset(llmUrl);
  // The model name the agent sends: the upstream's first listed model.
  const listing = (await (await fetch(`${llmUrl}/v1/models`, { headers: llmAuth })).json()) as {
    data: { id: string }[];
  };
  const res = await fetch(`${llmUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...llmAuth },
    body: JSON.stringify({
      model: listing.data[0]!.id,
      messages,
      temperature: 0,
      max_tokens: maxTokens,
      ...(responseFormat === undefined ? {} : { response_format: responseFormat }),
    }),
  });
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  if (res.status !== 200) throw new Error(`LLM ${res.status}: ${JSON.stringify(body)}`);
  return body.choices[0]!.message.content;
}

export { metricValue } from './helpers.js';
