/**
 * Helpers for the reasoning service's tests: a knowledge base written by the tests in the
 * documented format (SYNTHETIC: made-up numbers citing a synthetic source, never shipped), the
 * service on an ephemeral loopback port, tiny fake upstreams (code search, a broken LLM) and a fake
 * nvidia-smi from the fixtures.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildReasoningApp, type ReasoningService } from '../../services/reasoning/src/app.js';
import { loadReasoningConfig, type ReasoningConfig } from '../../services/reasoning/src/config.js';
import { writeKbDocument, type KbDocument } from '../../services/reasoning/src/kb/index.js';
import { fixture as gpuFixture } from '../kit/gpu/helpers.js';
import { captureLogs } from '../kit/helpers.js';
import { condition, feature, link } from './kb-helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

export const SYNTHETIC_SOURCE = 'synthetic-test-numbers';

/**
 * A SYNTHETIC base for the service tests: four made-up conditions (ids `syn_*`) and features named
 * like real findings so the extractor's text maps onto them. Every number is made up.
 */
export function serviceTestKb(id = 'service-test'): KbDocument {
  return {
    manifest: {
      format: 'clinicalsuite-kb/1',
      id,
      version: '1.0.0',
      title: 'SYNTHETIC service test base (made-up numbers)',
      description: 'SYNTHETIC: written by test/reasoning/service-helpers.ts for the service tests only',
      sources: [
        {
          id: SYNTHETIC_SOURCE,
          kind: 'modelling-choice',
          citation: 'Synthetic numbers written for the service tests',
        },
      ],
      leak: { default: 0.05, source: SYNTHETIC_SOURCE },
    },
    conditions: [
      condition({
        id: 'syn_febrile',
        icd10: 'A90',
        title_en: 'Synthetic febrile illness',
        title_vi: 'Bệnh sốt (giả)',
        prior: 0.2,
      }),
      condition({ id: 'syn_chest', icd10: 'I21.9', title_en: 'Synthetic chest condition', prior: 0.1 }),
      condition({ id: 'syn_resp', title_en: 'Synthetic respiratory condition', prior: 0.15 }),
      condition({ id: 'syn_skin', title_en: 'Synthetic skin condition', prior: 0.1 }),
    ],
    features: [
      feature({
        id: 'fever',
        hpo: 'HP:0001945',
        label_en: 'Fever',
        label_vi: 'Sốt',
        synonyms_en: ['Pyrexia'],
        synonyms_vi: ['sốt cao'],
      }),
      feature({ id: 'chest_pain', hpo: 'HP:0100749', label_en: 'Chest pain', label_vi: 'Đau ngực' }),
      feature({ id: 'rash', hpo: 'HP:0000988', kind: 'sign', label_en: 'Rash', label_vi: 'Phát ban' }),
      feature({ id: 'cough', hpo: 'HP:0012735', label_en: 'Cough', label_vi: 'Ho' }),
      feature({
        id: 'hypotension',
        hpo: 'HP:0002615',
        kind: 'vital',
        label_en: 'Hypotension',
        label_vi: 'Hạ huyết áp',
      }),
      feature({
        id: 'hypoxemia',
        hpo: 'HP:0012418',
        kind: 'vital',
        label_en: 'Hypoxemia',
        label_vi: 'Giảm oxy máu',
      }),
      feature({ id: 'male', kind: 'demographic', label_en: 'Male', label_vi: 'Nam' }),
    ],
    links: [
      link({ condition: 'syn_febrile', feature: 'fever', probability: 0.9 }),
      link({ condition: 'syn_febrile', feature: 'rash', probability: 0.5 }),
      link({ condition: 'syn_febrile', feature: 'hypotension', probability: 0.2 }),
      link({ condition: 'syn_chest', feature: 'chest_pain', probability: 0.9 }),
      link({ condition: 'syn_chest', feature: 'hypotension', probability: 0.3 }),
      link({ condition: 'syn_chest', feature: 'male', probability: 0.7 }),
      link({ condition: 'syn_resp', feature: 'cough', probability: 0.9 }),
      link({ condition: 'syn_resp', feature: 'fever', probability: 0.6 }),
      link({ condition: 'syn_resp', feature: 'hypoxemia', probability: 0.5 }),
      link({ condition: 'syn_skin', feature: 'rash', probability: 0.95 }),
    ],
  };
}

/** Writes a base into a fresh temporary directory and returns the directory. */
export async function writeTestKb(doc: KbDocument = serviceTestKb()): Promise<string> {
  const dir = join(mkdtempSync(join(tmpdir(), 'reasoning-svc-')), doc.manifest.id);
  await writeKbDocument(dir, doc);
  return dir;
}

export interface ReasoningTestServer {
  readonly service: ReasoningService;
  readonly config: ReasoningConfig;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The service on an ephemeral loopback port, started (bases and engine loaded or refused). */
export async function startReasoning(env: Record<string, string> = {}): Promise<ReasoningTestServer> {
  const config = loadReasoningConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    REASONING_DEVICE: 'cpu',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...authOffUnlessGiven(env, 'REASONING_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildReasoningApp({
    config,
    logger: createLogger({ service: 'reasoning', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
  });
  const server = await serve(service.kit, { signals: [], exit: false, onShutdown: () => service.close() });
  await service.start();
  return { service, config, server, url: server.url, logs, close: () => server.shutdown('test finished') };
}

// The response bodies are read loosely in the tests (their shape is the contract under test).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export async function diagnosis(url: string, body: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/api/v1/diagnosis`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as unknown };
}

export interface FakeUpstream {
  readonly url: string;
  readonly requests: { path: string; body: string }[];
  close(): Promise<void>;
}

/** A tiny HTTP server answering with `handler` (a fake code search or a broken LLM). */
export async function fakeUpstream(
  handler: (req: IncomingMessage, body: string, res: ServerResponse) => void,
): Promise<FakeUpstream> {
  const requests: { path: string; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** A fake nvidia-smi that prints a fixture of test/fixtures/nvidia-smi. */
export function fakeNvidiaSmi(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'reasoning-smi-'));
  const path = join(dir, 'nvidia-smi');
  writeFileSync(path, `#!/bin/sh\ncat <<'OUT'\n${gpuFixture(name).trimEnd()}\nOUT\n`);
  chmodSync(path, 0o755);
  return path;
}
