// End-to-end checks the real-node test runs inside a pod of the cluster: `node checks.mjs <check> [args]`.
// Each check calls the suite's Services by their DNS names, asserts what came back, prints one JSON
// line `{"check": ..., "ok": true, ...}` and exits 0; on failure it prints the reason to stderr and
// exits 1. The APIs are those each service's README documents (services/<name>/README.md).
// Built-ins only (Node 20), but for the `openai` SDK in the llm check.
import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';

const env = process.env;
const SUITE = env.SUITE ?? 'e2e';
const NAMESPACE = env.NAMESPACE ?? 'clinical';
const url = (svc, path) => `http://${SUITE}-${svc}.${NAMESPACE}.svc.cluster.local:8080${path}`;

class CheckError extends Error {}
function assert(cond, message) {
  if (!cond) throw new CheckError(message);
}
function token(name) {
  assert(env[name], `${name} is not set`);
  return env[name];
}
const bearer = (name) => ({ authorization: `Bearer ${token(name)}` });
const short = (s, n = 300) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** fetch with a deadline; the body parsed as JSON, and a non-2xx answer an error quoting it. */
async function call(target, init = {}, timeoutMs = 120_000) {
  const res = await fetch(target, { ...init, signal: AbortSignal.timeout(timeoutMs) }).catch((error) => {
    throw new CheckError(
      `${init.method ?? 'GET'} ${target}: ${error.message} (${error.cause?.code ?? error.name})`,
    );
  });
  const text = await res.text();
  assert(res.ok, `${init.method ?? 'GET'} ${target}: HTTP ${res.status}: ${short(text)}`);
  try {
    return { res, body: JSON.parse(text) };
  } catch {
    throw new CheckError(`${target}: HTTP ${res.status}, not JSON: ${short(text)}`);
  }
}
const postJson = (target, headers, body, timeoutMs) =>
  call(
    target,
    {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    },
    timeoutMs,
  );

/** A file inside the pod as a multipart part. */
function filePart(path) {
  const type = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg' }[
    extname(path).toLowerCase()
  ];
  assert(type, `${path}: expected a .png, .jpg or .jpeg file`);
  return [new Blob([readFileSync(path)], { type }), basename(path)];
}

/** The sum of a Prometheus counter's samples whose labels include every `labels` pair. */
async function counter(target, name, labels = {}) {
  const res = await fetch(target, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  assert(res.ok, `GET ${target}: HTTP ${res.status}`);
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}

const checks = {
  // Text LLM through the official SDK (services/llm/README.md: served as `alpha-2-9b-it` by default).
  async llm() {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ baseURL: url('llm', '/v1'), apiKey: token('LLM_TOKEN'), timeout: 300_000 });
    const model = env.LLM_MODEL ?? 'alpha-2-9b-it';
    const r = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Name one common symptom of influenza. Answer in a few words.' }],
      max_tokens: 16,
      temperature: 0,
    });
    const answer = r.choices[0]?.message?.content?.trim() ?? '';
    assert(answer !== '', `empty answer: ${JSON.stringify(r)}`);
    assert(
      r.usage?.prompt_tokens > 0 && r.usage?.completion_tokens > 0,
      `no usage: ${JSON.stringify(r.usage)}`,
    );
    return { model: r.model, answer, usage: r.usage };
  },

  // Agent /run (services/agent/README.md): the reply names the LLM that answered, with its usage;
  // the agent's and the LLM's metrics must both have moved.
  async agent() {
    const agentMetrics = url('agent', '/metrics');
    const llmMetrics = url('llm', '/metrics');
    const llms = ['alpha4_service', 'beta3_service', 'beta_service'];
    const okBefore = await counter(agentMetrics, 'agent_upstream_requests_total', { outcome: 'ok' });
    const tokensBefore = await counter(llmMetrics, 'llm_generation_tokens_total');
    const { body } = await postJson(
      url('agent', '/run'),
      bearer('AGENT_TOKEN'),
      {
        message: 'In one short sentence: what is the first-line drug for type 2 diabetes?',
        language: 'en',
        force_intent: 'chat',
      },
      300_000,
    );
    const answer = (body.response ?? '').trim();
    assert(answer !== '', `empty response: ${JSON.stringify(body)}`);
    assert(body.intent === 'chat', `intent ${body.intent}, expected chat`);
    assert(llms.includes(body.model), `model ${body.model} is not one of the agent's LLMs`);
    assert(body.usage?.completion_tokens > 0, `no LLM usage in the reply: ${JSON.stringify(body.usage)}`);
    const okAfter = await counter(agentMetrics, 'agent_upstream_requests_total', { outcome: 'ok' });
    const tokensAfter = await counter(llmMetrics, 'llm_generation_tokens_total');
    assert(okAfter > okBefore, `agent_upstream_requests_total{outcome="ok"} did not grow (${okBefore})`);
    assert(
      tokensAfter - tokensBefore >= body.usage.completion_tokens,
      `llm_generation_tokens_total grew by ${tokensAfter - tokensBefore}, less than the reply's ${body.usage.completion_tokens}`,
    );
    return {
      model: body.model,
      intent: body.intent,
      answer: short(answer, 200),
      usage: body.usage,
      llm_tokens_generated: tokensAfter - tokensBefore,
      processing_time_ms: body.processing_time_ms,
    };
  },

  // Face: register from photo A, recognize photo B (same person) and photo C (another), delete.
  async face(photoA, photoB, photoOther) {
    assert(photoA && photoB && photoOther, 'usage: face <photoA> <photoB> <photoOther>');
    const headers = bearer('FACE_TOKEN');
    const name = `e2e-check-${Date.now()}-${process.pid}`;
    const register = new FormData();
    register.append('person_name', name);
    register.append('file', ...filePart(photoA));
    const reg = await call(url('face', '/register_person'), { method: 'POST', headers, body: register });
    assert(
      reg.body.success === true && reg.body.data?.person_name === name,
      `register: ${JSON.stringify(reg.body)}`,
    );
    const recognize = async (path) => {
      const form = new FormData();
      form.append('file', ...filePart(path));
      const { body } = await call(url('face', '/recognize_faces'), { method: 'POST', headers, body: form });
      assert(
        body.success === true && Array.isArray(body.data?.faces),
        `recognize ${path}: ${JSON.stringify(body)}`,
      );
      return body.data.faces;
    };
    try {
      const same = await recognize(photoB);
      const hit = same.find((f) => f.person_name === name && f.recognized === true);
      assert(hit, `${photoB} was not recognized as ${name}: ${JSON.stringify(same)}`);
      const other = await recognize(photoOther);
      assert(other.length > 0, `no face detected in ${photoOther}`);
      const wrong = other.find((f) => f.person_name === name);
      assert(!wrong, `${photoOther} was recognized as ${name}: ${JSON.stringify(wrong)}`);
      return {
        person: name,
        same: { confidence: hit.confidence, distance: hit.distance },
        other: other.map((f) => ({
          person_name: f.person_name,
          confidence: f.confidence,
          distance: f.distance,
        })),
      };
    } finally {
      const del = await call(url('face', `/delete_person/${encodeURIComponent(name)}`), {
        method: 'DELETE',
        headers,
      });
      assert(del.body.success === true, `delete: ${JSON.stringify(del.body)}`);
    }
  },

  // Task proxy (services/task-proxy/README.md): sign in (cookie PHPSESSID; no CSRF token for
  // clients that send no Origin), create a task, poll get_task until it ends.
  async task() {
    const login = await postJson(
      url('task-proxy', '/login.php'),
      {},
      {
        username: token('TASK_PROXY_USER'),
        password: token('TASK_PROXY_PASSWORD'),
      },
    );
    assert(login.body.authenticated === true, `sign-in: ${JSON.stringify(login.body)}`);
    const cookie = login.res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .find((c) => c.startsWith('PHPSESSID='));
    assert(cookie, `no PHPSESSID cookie in ${JSON.stringify(login.res.headers.getSetCookie())}`);
    const action = (fields) =>
      call(
        url('task-proxy', '/api/agent_proxy.php'),
        { method: 'POST', headers: { cookie }, body: new URLSearchParams(fields) },
        30_000,
      ).then((r) => r.body);

    const created = await action({
      action: 'create_task',
      title: `e2e check ${new Date().toISOString()}`,
      description:
        'Find the ICD-10 code for type 2 diabetes mellitus with the medical code search, ' +
        'then finish with the code and its title in one line.',
      priority: 'high',
    });
    assert(
      Number.isInteger(created.id) && created.status === 'pending',
      `create_task: ${JSON.stringify(created)}`,
    );
    const deadline = Date.now() + Number(env.TASK_TIMEOUT_S ?? 300) * 1000;
    let task, logs;
    for (;;) {
      ({ task, logs } = await action({ action: 'get_task', task_id: String(created.id) }));
      if (!['pending', 'running'].includes(task.status)) break;
      assert(
        Date.now() < deadline,
        `task ${created.id} still ${task.status} after ${env.TASK_TIMEOUT_S ?? 300} s`,
      );
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
    const result = (task.result ?? '').trim();
    assert(task.status === 'done', `task ${created.id} ended ${task.status}: ${short(result)}`);
    assert(result !== '', `task ${created.id} is done with an empty result`);
    const skills = logs.flatMap((l) => /calling skill (\w+)/.exec(l.message)?.[1] ?? []).reverse();
    return { id: created.id, status: task.status, skills, result: short(result, 300) };
  },

  // Code search (services/codesearch/README.md): E11 (or a child of it) among the top 5.
  async codesearch() {
    const query = 'type 2 diabetes mellitus';
    const { body } = await postJson(url('codesearch', '/search'), bearer('CODESEARCH_TOKEN'), {
      query,
      code_types: ['ICD10'],
      top_k: 10,
    });
    assert(Array.isArray(body.results), `no results: ${JSON.stringify(body)}`);
    const top = body.results.slice(0, 5).map((r) => ({ code: r.code, title: r.title }));
    const e11 = top.find((r) => r.code.startsWith('E11'));
    assert(e11, `no E11 code among the top 5 for "${query}": ${JSON.stringify(top)}`);
    return { query, mode: body.mode, match: e11, top };
  },

  // OCR (services/ocr/README.md): the text read must hold every expected word.
  async ocr(image, ...expected) {
    assert(image && expected.length > 0, 'usage: ocr <image> <expected word>...');
    const form = new FormData();
    form.append('file', ...filePart(image));
    form.append('language', 'en');
    const { body } = await call(url('ocr', '/ocr'), {
      method: 'POST',
      headers: bearer('OCR_TOKEN'),
      body: form,
    });
    assert(typeof body.text === 'string', `no text: ${JSON.stringify(body)}`);
    const missing = expected.filter((w) => !body.text.toLowerCase().includes(w.toLowerCase()));
    assert(
      missing.length === 0,
      `missing ${JSON.stringify(missing)} in the text read: ${short(body.text, 500)}`,
    );
    return { expected, mean_confidence: body.mean_confidence, text: short(body.text, 300) };
  },

  // Any HTTP answer within 5 s is "reached"; a refused or dropped connection is not.
  async reach(target) {
    assert(target, 'usage: reach <url>');
    try {
      const res = await fetch(target, { signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      return { status: res.status };
    } catch (error) {
      const cause = error.cause?.code ?? error.cause?.message ?? error.name;
      throw new CheckError(`${target} not reached: ${error.message} (${cause})`);
    }
  },
};

const [name, ...args] = process.argv.slice(2);
if (!Object.hasOwn(checks, name ?? '')) {
  console.error(`usage: node checks.mjs <${Object.keys(checks).join('|')}> [args]`);
  process.exit(2);
}
try {
  const details = await checks[name](...args);
  console.log(JSON.stringify({ check: name, ok: true, ...details }));
} catch (error) {
  // Ours, the SDK's and fetch's errors by their message (and network cause); anything else with its stack.
  const cause = error?.cause ? ` (${error.cause.code ?? error.cause.message})` : '';
  const plain = error instanceof CheckError || error?.cause || error?.status;
  console.error(`check ${name} failed: ${plain ? `${error.message}${cause}` : (error?.stack ?? error)}`);
  process.exit(1);
}
