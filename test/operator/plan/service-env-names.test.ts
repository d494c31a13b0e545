/**
 * operator/src/plan/service-env-names.ts lists the variables each service's configuration reads,
 * so that the operator and the local runner can say when a spec's `env` sets one that nothing
 * reads. This test keeps it equal to the services' own schemas (services/<dir>/src/config.ts) and
 * what they read beside them; `UPDATE_GOLDEN=1` rewrites it.
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import type { z } from 'zod';
import { COMPONENT_KEYS, COMPONENTS, type ComponentKey } from '../../../operator/src/api/v1alpha1/index.js';
import { KIT_ENV_NAMES, SERVICE_ENV_NAMES } from '../../../operator/src/plan/service-env-names.js';
import { isRuntimeName, readEnvNames } from '../../../operator/src/plan/unread-env.js';
import { agentConfigSchema } from '../../../services/agent/src/config.js';
import { codesearchConfigSchema } from '../../../services/codesearch/src/config.js';
import { faceConfigSchema } from '../../../services/face/src/config.js';
import { llmConfigSchema } from '../../../services/llm/src/config.js';
import { medllmConfigSchema } from '../../../services/medllm/src/config.js';
import { ocrConfigSchema } from '../../../services/ocr/src/config.js';
import { patientSimConfigSchema } from '../../../services/patient-sim/src/config.js';
import { reasoningConfigSchema } from '../../../services/reasoning/src/config.js';
import { sttConfigSchema } from '../../../services/stt/src/config.js';
import { taskAgentConfigSchema } from '../../../services/task-agent/src/config.js';
import { taskProxyConfigSchema } from '../../../services/task-proxy/src/config.js';
import { ttsConfigSchema } from '../../../services/tts/src/config.js';

const CONFIG: Record<ComponentKey, z.ZodObject> = {
  llm: llmConfigSchema,
  agent: agentConfigSchema,
  face: faceConfigSchema,
  medllm: medllmConfigSchema,
  taskProxy: taskProxyConfigSchema,
  taskAgent: taskAgentConfigSchema,
  reasoning: reasoningConfigSchema,
  stt: sttConfigSchema,
  ocr: ocrConfigSchema,
  tts: ttsConfigSchema,
  codeSearch: codesearchConfigSchema,
  patientSim: patientSimConfigSchema,
};

/**
 * What a service reads beside its schema, named here: the task proxy's first user's password,
 * which its config loader hands over to be hashed and dropped, never kept in the config object.
 */
const BESIDES_SCHEMA: Partial<Record<ComponentKey, readonly string[]>> = {
  taskProxy: ['TASK_PROXY_PASSWORD'],
};

const FILE = fileURLToPath(new URL('../../../operator/src/plan/service-env-names.ts', import.meta.url));

/** What the schemas read: the names all of them share (the kit's), and each one's others. */
function fromSchemas(): { kit: string[]; services: Record<ComponentKey, string[]> } {
  const names = COMPONENT_KEYS.map((key) => Object.keys(CONFIG[key].shape));
  const kit = names[0]!.filter((name) => names.every((n) => n.includes(name))).sort();
  const services = Object.fromEntries(
    COMPONENT_KEYS.map((key, i) => [
      key,
      [...names[i]!.filter((name) => !kit.includes(name)), ...(BESIDES_SCHEMA[key] ?? [])].sort(),
    ]),
  ) as Record<ComponentKey, string[]>;
  return { kit, services };
}

async function render(): Promise<string> {
  const { kit, services } = fromSchemas();
  const text = `// Generated from each service's configuration schema (services/<dir>/src/config.ts) and what it
// reads beside it, by test/operator/plan/service-env-names.test.ts; \`UPDATE_GOLDEN=1\` rewrites it.
// Do not edit.
import type { ComponentKey } from '../api/v1alpha1/index.js';

/** The variables every service's configuration reads (the kit's). */
export const KIT_ENV_NAMES: readonly string[] = ${JSON.stringify(kit)};

/** The variables each component's service reads besides the kit's. */
export const SERVICE_ENV_NAMES: Readonly<Record<ComponentKey, readonly string[]>> = {
${COMPONENT_KEYS.map((key) => `  ${key}: ${JSON.stringify(services[key])},`).join('\n')}
};
`;
  return prettier.format(text, { ...(await prettier.resolveConfig(FILE)), filepath: FILE });
}

describe('operator/src/plan/service-env-names.ts', () => {
  it('lists what each service configuration reads', async () => {
    if (process.env['UPDATE_GOLDEN'] === '1') writeFileSync(FILE, await render());
    const { kit, services } = fromSchemas();
    expect([...KIT_ENV_NAMES]).toEqual(kit);
    expect(Object.fromEntries(COMPONENT_KEYS.map((key) => [key, [...SERVICE_ENV_NAMES[key]]]))).toEqual(
      services,
    );
    expect(kit).toEqual(expect.arrayContaining(['PORT', 'HOST', 'LOG_LEVEL', 'MAX_CONCURRENCY']));
  });

  it("knows every variable a service's source reads by name beside its schema", () => {
    // process.env.X, process.env['X'], and the config loaders' source['X'] / env['X'].
    const read = /(?:process\.env\.|(?:process\.env|source|env)\[['"])([A-Z][A-Z0-9_]+)/g;
    const missing = COMPONENT_KEYS.flatMap((key) => {
      const dir = fileURLToPath(new URL(`../../../services/${COMPONENTS[key].dir}/src/`, import.meta.url));
      const sources = readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => /\.c?ts$/.test(f))
        .map((f) => readFileSync(join(dir, f), 'utf8'));
      const known = new Set(readEnvNames(key));
      return sources.flatMap((text) =>
        [...text.matchAll(read)]
          .map((m) => m[1]!)
          // Not a user's setting: one the service sets for its own child process (NAME: value).
          .filter(
            (name) =>
              !known.has(name) &&
              !isRuntimeName(name) &&
              !sources.some((t) => new RegExp(`^\\s+${name}: `, 'm').test(t)),
          )
          .map((name) => `${key}: ${name}`),
      );
    });
    expect([...new Set(missing)]).toEqual([]);
  });

  it('is written as the generator writes it', async () => {
    expect(readFileSync(FILE, 'utf8')).toBe(await render());
  });
});
