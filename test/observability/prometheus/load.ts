/**
 * A small load against every running service for the Prometheus test: successes, a few 4xx
 * (bad bodies, missing tokens, unknown ids), LLM chat completions whole and streamed (so the time
 * to first token and inter-token histograms fill), face recognition on a real photograph, OCR of
 * a rendered note, speech to text of espeak-ng speech, reasoning diagnoses, agent intents, task
 * agent tasks, the task proxy's sign-in and actions, code search, patient turns, medllm text and
 * image. Returns what was sent and answered, per service and status, so the test can say so.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import WebSocket from 'ws';
import { COMPONENTS, type ComponentKey } from '../../../operator/src/api/v1alpha1/index.js';
import { ensureFacePhotos } from '../../fixtures/photos/face-photos.js';

export interface LoadSummary {
  /** `service status` → count (status `error` for a request that got no answer). */
  readonly counts: Record<string, number>;
  readonly startedAt: number;
  readonly endedAt: number;
}

interface Step {
  readonly service: ComponentKey;
  readonly run: () => Promise<number>;
}

/**
 * The services the load calls only as their clients do, each with its own token (the llm, the
 * agent and the task agent get theirs explicitly, as some requests go without one on purpose).
 */
const WITH_OWN_TOKEN: readonly ComponentKey[] = [
  'face',
  'medllm',
  'reasoning',
  'stt',
  'ocr',
  'tts',
  'codeSearch',
  'patientSim',
];

/** The token of the service at a URL, for {@link fetch}; set by runLoad. */
let tokenFor: (url: string) => string | undefined = () => undefined;

/** Node's fetch, with the service's own token where the request names none. */
function fetch(input: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = tokenFor(input);
  if (token !== undefined && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
  return globalThis.fetch(input, { ...init, headers });
}

async function status(res: Promise<Response>): Promise<number> {
  const r = await res;
  // Read the whole body (SSE streams included): the request is over when its response is.
  await r.arrayBuffer();
  return r.status;
}

/** Starts a streamed request and hangs up after the first chunk: a client that went away. */
async function abortAfterFirstChunk(url: string, init: RequestInit): Promise<number> {
  const controller = new AbortController();
  const res = await fetch(url, { ...init, signal: controller.signal });
  const reader = res.body?.getReader();
  await reader?.read();
  controller.abort();
  await reader?.cancel().catch(() => undefined);
  // Give the service a moment to see the disconnect before the next request reuses the slot.
  await new Promise((r) => setTimeout(r, 100));
  return 499;
}

/** Opens the agent's WebSocket with a wrong token: it must be closed for failed authentication. */
function wsWithoutToken(url: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const done = (code: number) => {
      ws.removeAllListeners();
      ws.terminate();
      resolve(code);
    };
    ws.on('unexpected-response', (_req, res) => done(res.statusCode ?? 0));
    ws.on('close', (code) => done(code));
    ws.on('error', () => done(0));
    setTimeout(() => done(-1), 5000).unref();
  });
}

const json = (body: unknown, token?: string): RequestInit => ({
  method: 'POST',
  headers: {
    'content-type': 'application/json',
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
  },
  body: JSON.stringify(body),
  signal: AbortSignal.timeout(30_000),
});

const FILE_NAMES: Record<string, string> = {
  'image/jpeg': 'photo.jpg',
  'image/png': 'note.png',
  'audio/wav': 'speech.wav',
};

const multipart = (fields: Record<string, string | Blob>, token?: string): RequestInit => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === 'string') form.append(k, v);
    else form.append(k, v, FILE_NAMES[v.type] ?? 'upload.bin');
  }
  return {
    method: 'POST',
    body: form,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(30_000),
  };
};

/** A PNG of a short clinical note (DejaVu Sans, black on white), for OCR. */
async function notePng(): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="160">
  <rect width="100%" height="100%" fill="white"/>
  <text x="20" y="60" font-family="DejaVu Sans" font-size="34" fill="black">Patient has fever and cough</text>
  <text x="20" y="120" font-family="DejaVu Sans" font-size="34" fill="black">Blood pressure 150/95 mmHg</text>
</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** English speech from espeak-ng (WAV), for speech to text. */
function speechWav(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'cs-load-'));
  try {
    const file = join(dir, 'speech.wav');
    execFileSync('espeak-ng', ['-v', 'en', '-w', file, 'the patient has a fever and a cough']);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the load for `durationMs` (and at least one round of every step) with `concurrency`
 * requests in flight, cycling through one step per kind of request; returns the counts.
 */
export async function runLoad(options: {
  readonly urls: ReadonlyMap<ComponentKey, string>;
  readonly tokens: Readonly<Record<string, string>>;
  readonly durationMs: number;
  readonly concurrency?: number;
}): Promise<LoadSummary> {
  const { urls, tokens } = options;
  const url = (key: ComponentKey, path: string) => `${urls.get(key)!}${path}`;
  tokenFor = (target) => {
    const key = WITH_OWN_TOKEN.find((k) => urls.has(k) && target.startsWith(`${urls.get(k)!}/`));
    const name = key === undefined ? undefined : COMPONENTS[key].tokenEnv[0];
    return name === undefined ? undefined : tokens[name];
  };
  const photos = await ensureFacePhotos();
  const photo = new Blob([readFileSync(photos.obama)], { type: 'image/jpeg' });
  const group = new Blob([readFileSync(photos.group3)], { type: 'image/jpeg' });
  const note = new Blob([await notePng()], { type: 'image/png' });
  const wav = new Blob([speechWav()], { type: 'audio/wav' });
  const smallPng = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#884422' } })
    .png()
    .toBuffer();
  const llmToken = tokens['API_TOKEN'];
  const agentToken = tokens['AI_AGENT_API_TOKEN'];
  const taskToken = tokens['TASK_AGENT_API_TOKEN'];
  const steps: Step[] = [];
  const add = (service: ComponentKey, run: () => Promise<number>) => {
    if (urls.has(service)) steps.push({ service, run });
  };
  const chat = (content: string) => [{ role: 'user', content }];
  const modelOf = async (key: ComponentKey, token?: string): Promise<string> => {
    if (!urls.has(key)) return '';
    const res = await fetch(url(key, '/v1/models'), {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { data: { id: string }[] };
    return body.data[0]?.id ?? '';
  };
  const llmModel = await modelOf('llm', llmToken);
  const medllmModel = await modelOf('medllm');

  // Text LLM: whole and streamed completions, the native /chat, and 401/400s.
  add('llm', () =>
    status(
      fetch(
        url('llm', '/v1/chat/completions'),
        json({ model: llmModel, messages: chat('fever and cough'), max_tokens: 12 }, llmToken),
      ),
    ),
  );
  add('llm', () =>
    status(
      fetch(
        url('llm', '/v1/chat/completions'),
        json({ model: llmModel, messages: chat('chest pain'), max_tokens: 16, stream: true }, llmToken),
      ),
    ),
  );
  add('llm', () =>
    abortAfterFirstChunk(
      url('llm', '/v1/chat/completions'),
      json({ model: llmModel, messages: chat('long answer'), max_tokens: 2000, stream: true }, llmToken),
    ),
  );
  add('llm', () => status(fetch(url('llm', '/chat'), json({ prompt: 'headache', max_tokens: 8 }, llmToken))));
  add('llm', () =>
    status(fetch(url('llm', '/v1/chat/completions'), json({ model: llmModel, messages: chat('hi') }))),
  );
  add('llm', () =>
    status(fetch(url('llm', '/v1/chat/completions'), json({ model: llmModel, messages: [] }, llmToken))),
  );
  // Agent: intents through /run, a sub-service call, a refused shell, a bad body, no token.
  for (const message of [
    'xin chào',
    'translate "good morning" to Vietnamese',
    'search ICD code for hypertension',
  ]) {
    add('agent', () => status(fetch(url('agent', '/run'), json({ message, language: 'en' }, agentToken))));
  }
  add('agent', () =>
    status(fetch(url('agent', '/chat'), json({ message: 'hello', max_tokens: 8, stream: true }, agentToken))),
  );
  add('agent', () =>
    status(fetch(url('agent', '/search'), json({ query: 'hypertension', top_k: 3 }, agentToken))),
  );
  add('agent', () =>
    status(fetch(url('agent', '/tts'), json({ text: 'hello', language: 'en' }, agentToken))),
  );
  // A session, then its end; a pipeline (OCR, then code search); a WebSocket without a token.
  let session = 0;
  add('agent', async () => {
    const id = `observability-${++session}`;
    await status(
      fetch(url('agent', '/chat'), json({ message: 'hello', session_id: id, max_tokens: 4 }, agentToken)),
    );
    return status(
      fetch(url('agent', `/sessions/${id}`), {
        method: 'DELETE',
        headers: { authorization: `Bearer ${agentToken ?? ''}` },
        signal: AbortSignal.timeout(10_000),
      }),
    );
  });
  add('agent', () =>
    status(
      fetch(url('agent', '/pipeline/image-to-codes'), multipart({ file: note, language: 'en' }, agentToken)),
    ),
  );
  add('agent', () => wsWithoutToken(url('agent', '/ws/chat?token=not-a-token').replace('http://', 'ws://')));
  // The LLM that is down first: a retry, a cooldown, a fallback to the next.
  add('agent', () =>
    status(
      fetch(
        url('agent', '/chat'),
        json({ message: 'hello', force_llm: 'beta3_service', max_tokens: 4 }, agentToken),
      ),
    ),
  );
  add('agent', () => status(fetch(url('agent', '/shell'), json({ command: 'ls' }, agentToken))));
  add('agent', () => status(fetch(url('agent', '/chat'), json({}, agentToken))));
  add('agent', () => status(fetch(url('agent', '/chat'), json({ message: 'hi' }))));
  add('agent', () =>
    status(
      fetch(
        url('agent', '/v1/chat/completions'),
        json({ messages: chat('hello'), max_tokens: 8, stream: true }, agentToken),
      ),
    ),
  );
  // Face: recognize a real photograph, a group photo, register once, and bad uploads.
  add('face', () => status(fetch(url('face', '/recognize_faces'), multipart({ file: photo }))));
  add('face', () => status(fetch(url('face', '/recognize_faces'), multipart({ file: group }))));
  let registered = false;
  add('face', () => {
    if (registered)
      return status(fetch(url('face', '/list_persons'), { signal: AbortSignal.timeout(10_000) }));
    registered = true;
    return status(fetch(url('face', '/register_person'), multipart({ person_name: 'Obama', file: photo })));
  });
  add('face', () => status(fetch(url('face', '/recognize_faces'), multipart({}))));
  // Multimodal LLM: text, an image, a bad body.
  add('medllm', () =>
    status(
      fetch(
        url('medllm', '/v1/chat/completions'),
        json({ model: medllmModel, messages: chat('Describe a chest X-ray.'), max_tokens: 8 }),
      ),
    ),
  );
  add('medllm', () =>
    status(
      fetch(
        url('medllm', '/v1/chat/completions'),
        json({
          model: medllmModel,
          max_tokens: 6,
          stream: true,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What does the image show?' },
                {
                  type: 'image_url',
                  image_url: { url: `data:image/png;base64,${smallPng.toString('base64')}` },
                },
              ],
            },
          ],
        }),
      ),
    ),
  );
  add('medllm', () => status(fetch(url('medllm', '/v1/chat/completions'), json({ model: medllmModel }))));
  // An image that is not one (refused, by reason), and a generation the client walks away from.
  add('medllm', () =>
    status(
      fetch(
        url('medllm', '/v1/chat/completions'),
        json({
          model: medllmModel,
          max_tokens: 4,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What is this?' },
                {
                  type: 'image_url',
                  image_url: { url: `data:image/png;base64,${Buffer.from('not a png').toString('base64')}` },
                },
              ],
            },
          ],
        }),
      ),
    ),
  );
  add('medllm', () =>
    abortAfterFirstChunk(
      url('medllm', '/v1/chat/completions'),
      json({
        model: medllmModel,
        messages: chat('Describe a chest X-ray in detail.'),
        max_tokens: 500,
        stream: true,
      }),
    ),
  );
  // Reasoning: diagnoses (rules only and with the LLM), a bad body.
  for (const text of [
    'Patient 62 years old with central chest pressure for two hours, sweating, BP 150/95.',
    'Sốt 39 độ, ho có đờm ba ngày, đau ngực phải khi hít sâu.',
  ]) {
    add('reasoning', () =>
      status(fetch(url('reasoning', '/api/v1/diagnosis'), json({ text, use_llm: false }))),
    );
  }
  add('reasoning', () =>
    status(
      fetch(
        url('reasoning', '/api/v1/diagnosis'),
        json({ text: 'fever and cough for three days', use_llm: true }),
      ),
    ),
  );
  add('reasoning', () => status(fetch(url('reasoning', '/api/v1/diagnosis'), json({ top_k: 'many' }))));
  // Task agent: create tasks (its workers run them on the LLM), list, an unknown id, no token.
  add('taskAgent', () =>
    status(
      fetch(
        url('taskAgent', '/api/v1/tasks'),
        json({ title: 'Look up the ICD-10 code of hypertension' }, taskToken),
      ),
    ),
  );
  add('taskAgent', () =>
    status(
      fetch(url('taskAgent', '/api/v1/tasks'), { headers: { authorization: `Bearer ${taskToken ?? ''}` } }),
    ),
  );
  add('taskAgent', () =>
    status(
      fetch(url('taskAgent', '/api/v1/tasks/999999'), {
        headers: { authorization: `Bearer ${taskToken ?? ''}` },
      }),
    ),
  );
  add('taskAgent', () => status(fetch(url('taskAgent', '/api/v1/tasks'))));
  // Task proxy: a sign-in, a wrong password, an action without a session.
  const proxyForm = (path: string, form: Record<string, string>) =>
    status(
      fetch(url('taskProxy', path), {
        method: 'POST',
        body: new URLSearchParams(form),
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      }),
    );
  add('taskProxy', () =>
    proxyForm('/login.php', {
      username: tokens['TASK_PROXY_USER'] ?? 'admin',
      password: tokens['TASK_PROXY_PASSWORD'] ?? '',
    }),
  );
  add('taskProxy', () => proxyForm('/login.php', { username: 'admin', password: 'wrong' }));
  add('taskProxy', () => proxyForm('/api/agent_proxy.php', { action: 'list_tasks' }));
  // Sub-services.
  add('stt', () => status(fetch(url('stt', '/transcribe'), multipart({ file: wav, language: 'en' }))));
  add('stt', () => status(fetch(url('stt', '/transcribe'), multipart({ language: 'en' }))));
  add('ocr', () => status(fetch(url('ocr', '/ocr'), multipart({ file: note }))));
  add('ocr', () => status(fetch(url('ocr', '/ocr'), multipart({}))));
  add('tts', () => status(fetch(url('tts', '/tts'), json({ text: 'xin chào bác sĩ', language: 'vi' }))));
  add('tts', () => status(fetch(url('tts', '/tts'), json({ text: 'good morning doctor', language: 'en' }))));
  add('tts', () => status(fetch(url('tts', '/tts'), json({ text: '' }))));
  add('codeSearch', () =>
    status(fetch(url('codeSearch', '/search'), json({ query: 'tang huyet ap', top_k: 5 }))),
  );
  add('codeSearch', () =>
    status(fetch(url('codeSearch', '/search'), json({ query: 'hypertension', hybrid: true }))),
  );
  add('codeSearch', () =>
    status(fetch(url('codeSearch', '/codes/icd10cm/I10'), { signal: AbortSignal.timeout(10_000) })),
  );
  add('codeSearch', () => status(fetch(url('codeSearch', '/search'), json({}))));
  add('patientSim', () =>
    status(
      fetch(
        url('patientSim', '/patient'),
        json({ message: 'Where does it hurt?', patient_id: 'en-chest-pressure-chen' }),
      ),
    ),
  );
  add('patientSim', () =>
    status(fetch(url('patientSim', '/patient'), json({ message: 'hello', patient_id: 'no-such-patient' }))),
  );

  const counts: Record<string, number> = {};
  const startedAt = Date.now();
  const deadline = startedAt + options.durationMs;
  let next = 0;
  const worker = async () => {
    // Every kind of request at least once, however slow the machine: some panels chart only it.
    while (Date.now() < deadline || next < steps.length) {
      const step = steps[next++ % steps.length]!;
      let code: string;
      try {
        code = String(await step.run());
      } catch {
        code = 'error';
      }
      const key = `${step.service} ${code}`;
      counts[key] = (counts[key] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker));
  return { counts, startedAt, endedAt: Date.now() };
}
