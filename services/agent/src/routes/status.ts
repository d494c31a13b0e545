import { performance } from 'node:perf_hooks';
import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import type { z } from 'zod';
import { SUBSERVICE_CATALOGUE, type SubserviceClients } from '../adapters/subservices/index.js';
import type { UpstreamStatus } from '../adapters/upstream-pool.js';
import { SUBSERVICE_IDS } from '../domain/subservices.js';
import type { UpstreamId } from '../domain/types.js';
import {
  CapabilitiesResponseSchema,
  StatusResponseSchema,
  type CapabilitySchema,
} from '../schemas/subservices.js';
import type { AgentRuntime } from './runtime.js';

/**
 * `GET /status` (token required): every sub-service's `/health` and the three LLM upstreams' probes,
 * all in parallel, each within AGENT_STATUS_TIMEOUT_MS, with the state and latency of each; plus
 * sessions and the concurrency gate. Always 200: it is a report (GET /health is the probe).
 *
 * `GET /capabilities` (no token): what the agent can do: the three LLMs, the six sub-services, the
 * four pipelines and the shell, each with id, name, description, tags, `gpu` (whether it runs on a
 * GPU in the suite's default deployment, as the operator's catalogue places it: the LLMs and face
 * recognition; a pipeline when one of its steps does), kind, the agent endpoints that use it, and
 * whether it is configured. No URLs and no health: that is /status, behind the token.
 */

type LlmView = z.infer<typeof StatusResponseSchema>['llms'][number];

export function statusRoute(rt: AgentRuntime, subs: SubserviceClients): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Checks every sub-service and the three LLMs in parallel: state and latency of each',
    description:
      'Each sub-service (stt, ocr, tts, codesearch, patient_sim, face) is asked for its /health and each LLM ' +
      'upstream (alpha4_service, beta3_service, beta_service) probed, in parallel, each within ' +
      'AGENT_STATUS_TIMEOUT_MS. States: `up`; `not_ready` (it answered 503, with its reason); `down` ' +
      '(unreachable, no answer in time, another status); `not_configured` (its URL unset: not counted against ' +
      '`status`); LLMs also `unauthorized`, and `cooling_down` while the router skips one after failures. ' +
      '`status`: `ok` when every LLM (not cooling down) and every configured sub-service is up, `degraded` ' +
      'when an LLM is up but something else is not, `down` when no LLM is up. Always 200.',
    tags: ['info'],
    response: StatusResponseSchema,
    handler: async ({ signal }) => {
      const started = performance.now();
      const [subservices, llms] = await Promise.all([subs.check(signal), checkLlms(rt)]);
      const llmUp = llms.some((l) => l.state === 'up' && !l.cooling_down);
      const allUp =
        llms.every((l) => l.state === 'up' && !l.cooling_down) &&
        subservices.every((s) => s.state === 'up' || s.state === 'not_configured');
      const gate = rt.gate;
      return {
        status: !llmUp ? ('down' as const) : allUp ? ('ok' as const) : ('degraded' as const),
        service: 'ai_agent' as const,
        version: rt.version,
        uptime_seconds: Math.max(0, Math.floor((rt.now() - rt.startedAt) / 1000)),
        checked_at: new Date(rt.now()).toISOString(),
        check_ms: Math.round((performance.now() - started) * 10) / 10,
        subservices,
        llms,
        sessions: {
          active: rt.sessions.size,
          max: rt.config.AGENT_MAX_SESSIONS,
          ttl_seconds: rt.config.AGENT_SESSION_TTL_S,
          replica_local: true as const,
        },
        gate: { limit: gate.limit, running: gate.running, waiting: gate.waiting, queue_size: gate.queueSize },
      };
    },
  });
}

/**
 * The upstream pool's probe round, within AGENT_STATUS_TIMEOUT_MS: an upstream whose probe has not
 * come back by then is `down` ("no answer within ..."), the others as probed. Never throws.
 */
async function checkLlms(rt: AgentRuntime): Promise<LlmView[]> {
  const timeoutMs = rt.config.AGENT_STATUS_TIMEOUT_MS;
  const since = rt.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  let probed: readonly UpstreamStatus[] | null;
  try {
    // Not tied to this request: a client that leaves must not cut the pool's probe round short (it
    // would record every upstream as down); the round has its own deadline.
    probed = await Promise.race([rt.upstreams.check(), late]);
  } catch {
    probed = null;
  } finally {
    clearTimeout(timer);
  }
  const fresh = (s: UpstreamStatus): boolean =>
    s.checked_at !== null && Date.parse(s.checked_at) >= since - 1;
  return (probed ?? rt.upstreams.statuses()).map((s): LlmView => {
    if (probed !== null || fresh(s)) return view(s);
    return {
      ...view(s),
      state: 'down',
      latency_ms: timeoutMs,
      detail: `no answer within ${timeoutMs} ms (AGENT_STATUS_TIMEOUT_MS)${s.state === 'unknown' ? '' : `; last probe: ${s.state}`}`,
    };
  });
}

function view(s: UpstreamStatus): LlmView {
  return {
    id: s.id,
    url: s.url,
    state: s.state === 'unknown' ? 'down' : s.state,
    latency_ms: s.latency_ms,
    detail: s.state === 'unknown' ? (s.detail ?? 'not probed yet') : s.detail,
    model: s.model,
    cooling_down: s.cooling_down,
    cooldown_until: s.cooldown_until,
    checked_at: s.checked_at,
  };
}

type Capability = z.infer<typeof CapabilitySchema>;

const LLM_CAPABILITIES: Readonly<Record<UpstreamId, { name: string; description: string; tags: string[] }>> =
  {
    alpha4_service: {
      name: 'Primary LLM',
      description:
        'The primary language model: chat, analysis, translation, summaries, intent classification and the pipelines’ analyses.',
      tags: ['llm', 'chat', 'primary', 'vi', 'en'],
    },
    beta3_service: {
      name: 'Reasoning and code LLM',
      description:
        'The reasoning model: code generation and debugging always go here first; a fallback for the rest.',
      tags: ['llm', 'reasoning', 'code', 'vi', 'en'],
    },
    beta_service: {
      name: 'Fallback LLM',
      description: 'The fallback model, used when the others fail or time out.',
      tags: ['llm', 'fallback', 'vi', 'en'],
    },
  };

const LLM_ENDPOINTS = [
  'POST /run',
  'POST /chat',
  'POST /chat/raw',
  'POST /analyze',
  'POST /translate',
  'POST /summarize',
  'POST /code',
  'POST /debug',
  'POST /v1/chat/completions',
  'WS /ws/chat',
];

const PIPELINES: readonly {
  id: string;
  name: string;
  description: string;
  tags: string[];
  uses: readonly (typeof SUBSERVICE_IDS)[number][];
}[] = [
  {
    id: 'pipeline/audio-to-diagnosis',
    name: 'Audio to symptom analysis',
    description: 'Speech to text, then the LLM analyses the symptoms described (not a diagnosis).',
    tags: ['pipeline', 'audio', 'speech', 'analysis'],
    uses: ['stt'],
  },
  {
    id: 'pipeline/audio-full-consult',
    name: 'Spoken consultation',
    description: 'Speech to text, an LLM consultation reply, and the reply spoken back (audio_base64).',
    tags: ['pipeline', 'audio', 'speech', 'consultation'],
    uses: ['stt', 'tts'],
  },
  {
    id: 'pipeline/image-to-codes',
    name: 'Document image to codes',
    description:
      'OCR, the code search proposes ICD-10/ICPC-2 codes for the text, and the LLM chooses among them with reasons.',
    tags: ['pipeline', 'image', 'ocr', 'codes', 'icd10', 'icpc2'],
    uses: ['ocr', 'codesearch'],
  },
  {
    id: 'pipeline/image-full-analysis',
    name: 'Document image analysis',
    description: 'OCR, then a detailed LLM analysis of the medical document (not a diagnosis).',
    tags: ['pipeline', 'image', 'ocr', 'analysis'],
    uses: ['ocr'],
  },
];

export function capabilitiesRoute(rt: AgentRuntime): AnyRoute {
  const configured = (id: (typeof SUBSERVICE_IDS)[number]): boolean =>
    rt.config[SUBSERVICE_CATALOGUE[id].envVar] !== undefined;
  const capabilities = (): Capability[] => [
    ...rt.config.upstreams.map((u) => ({
      id: u.id,
      ...LLM_CAPABILITIES[u.id],
      gpu: true,
      kind: 'llm' as const,
      endpoints: u.id === 'beta_service' ? LLM_ENDPOINTS.filter((e) => e !== 'POST /run') : LLM_ENDPOINTS,
      available: true,
    })),
    ...SUBSERVICE_IDS.map((id) => {
      const s = SUBSERVICE_CATALOGUE[id];
      return {
        id,
        name: s.name,
        description: s.description,
        tags: [...s.tags],
        gpu: s.gpu,
        kind: 'subservice' as const,
        endpoints: [...s.endpoints],
        available: configured(id),
      };
    }),
    ...PIPELINES.map((p) => ({
      id: p.id,
      name: p.name,
      description: p.description,
      tags: p.tags,
      // Every pipeline has an LLM step.
      gpu: true,
      kind: 'pipeline' as const,
      endpoints: [`POST /${p.id}`],
      available: p.uses.every(configured),
    })),
    {
      id: 'shell',
      name: 'Guarded shell',
      description:
        'Runs allow-listed commands (or a request in words, translated by the LLM and checked the same way) without a shell, in a fixed working directory; off unless SHELL_EXEC_ENABLED.',
      tags: ['shell', 'operations'],
      gpu: false,
      kind: 'feature' as const,
      endpoints: ['POST /shell'],
      available: rt.config.SHELL_EXEC_ENABLED,
    },
  ];
  return defineRoute({
    method: 'get',
    path: '/capabilities',
    summary: 'What the agent can do: LLMs, sub-services, pipelines, shell (no token needed)',
    description:
      'Each entry: `id`, `name`, `description`, `tags`, `gpu` (runs on a GPU in the suite’s default ' +
      'deployment; a pipeline when one of its steps does), `kind` (llm, subservice, pipeline, feature), ' +
      '`endpoints` (the agent’s endpoints that use it) and `available` (configured; health is /status).',
    tags: ['info'],
    auth: false,
    response: CapabilitiesResponseSchema,
    handler: () => ({ service: 'ai_agent' as const, version: rt.version, capabilities: capabilities() }),
  });
}
