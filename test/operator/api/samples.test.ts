import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { COMPONENT_KEYS, enabledComponents, parseSuite } from '../../../operator/src/api/v1alpha1/index.js';
import { describeUnreadEnv, unreadEnv, unreadFetchEnv } from '../../../operator/src/plan/unread-env.js';

const samplesDir = fileURLToPath(new URL('../../../crds/samples/', import.meta.url));
const samples = readdirSync(samplesDir).filter((f) => f.endsWith('.yaml'));

describe('crds/samples', () => {
  it('has the local, minimal CPU, GPU and full samples', () => {
    expect(samples).toEqual(
      expect.arrayContaining(['local.yaml', 'minimal-cpu.yaml', 'gpu.yaml', 'full.yaml']),
    );
  });

  it.each(samples)('%s parses', (file) => {
    const suite = parseSuite(parse(readFileSync(samplesDir + file, 'utf8')));
    expect(suite.metadata.name).toBe(file.replace(/\.yaml$/, ''));
  });

  it('full.yaml enables every component; local.yaml lists every component', () => {
    const full = parseSuite(parse(readFileSync(samplesDir + 'full.yaml', 'utf8')));
    expect(enabledComponents(full.spec.services)).toHaveLength(COMPONENT_KEYS.length);
    const local = parseSuite(parse(readFileSync(samplesDir + 'local.yaml', 'utf8')));
    expect(Object.keys(local.spec.services).sort()).toEqual([...COMPONENT_KEYS].sort());
  });

  // A variable no service reads is a setting that silently does nothing (full.yaml once set
  // LLM_CONTEXT_SIZE; the llm reads CONTEXT_SIZE). The runners warn about one; a sample sets none.
  it.each(samples)('%s sets only variables its services read', (file) => {
    const suite = parseSuite(parse(readFileSync(samplesDir + file, 'utf8')));
    const unread = COMPONENT_KEYS.flatMap((key) => [...unreadEnv(suite, key), ...unreadFetchEnv(suite, key)]);
    expect(unread.map(describeUnreadEnv)).toEqual([]);
  });

  it('minimal-cpu.yaml asks for no GPU', () => {
    const suite = parseSuite(parse(readFileSync(samplesDir + 'minimal-cpu.yaml', 'utf8')));
    const profiles = enabledComponents(suite.spec.services).map(
      (k) => suite.spec.services[k]?.resourceProfile,
    );
    expect(profiles.every((p) => p === undefined || p.startsWith('cpu:'))).toBe(true);
  });
});
