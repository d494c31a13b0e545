import type { z } from 'zod';
import { SUBSERVICE_CATALOGUE } from '../domain/subservice-catalogue.js';
import { SUBSERVICE_IDS } from '../domain/subservices.js';
import type { UpstreamId } from '../domain/types.js';
import type { CapabilitySchema } from '../schemas/subservices.js';
import type { UseCaseDeps } from './ports.js';

/**
 * `/capabilities`: what the agent can do: the three LLMs, the six sub-services, the four pipelines
 * and the shell, each with id, name, description, tags, `gpu` (whether it runs on a GPU in the
 * suite's default deployment, as the operator's catalogue places it: the LLMs and face recognition;
 * a pipeline when one of its steps does), kind, the agent endpoints that use it, and whether it is
 * configured. No URLs and no health: that is the status report, behind the token.
 */

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

export function capabilitiesUseCase(deps: Pick<UseCaseDeps, 'config' | 'version'>) {
  const configured = (id: (typeof SUBSERVICE_IDS)[number]): boolean =>
    deps.config[SUBSERVICE_CATALOGUE[id].envVar] !== undefined;
  const capabilities = (): Capability[] => [
    ...deps.config.upstreams.map((u) => ({
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
      available: deps.config.SHELL_EXEC_ENABLED,
    },
  ];
  return () => ({ service: 'ai_agent' as const, version: deps.version, capabilities: capabilities() });
}
