// Writes the kind config of an end-to-end run: the repository's kind-config.yaml with the cluster
// name and the host's models directory filled in (kind does not expand variables), and without
// the control plane's host port mapping (the tests need no ingress, and port 8080 is often taken).
//
//   node test/e2e/kind-config.js <kind-config.yaml> <out.yaml> <cluster name> <models dir>
import { readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { parse, stringify } from 'yaml';

export function e2eKindConfig(text, name, modelsDir) {
  if (!isAbsolute(modelsDir)) throw new Error(`the models directory must be an absolute path: ${modelsDir}`);
  const config = parse(text);
  if (config?.kind !== 'Cluster' || !Array.isArray(config.nodes)) {
    throw new Error('not a kind Cluster config with nodes');
  }
  config.name = name;
  for (const node of config.nodes) {
    delete node.extraPortMappings;
    for (const mount of node.extraMounts ?? []) mount.hostPath = modelsDir;
  }
  return stringify(config);
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [src, dest, name, modelsDir] = process.argv.slice(2);
  if (!src || !dest || !name || !modelsDir) {
    process.stderr.write(
      'usage: node test/e2e/kind-config.js <kind-config.yaml> <out.yaml> <name> <models dir>\n',
    );
    process.exit(2);
  }
  try {
    writeFileSync(dest, e2eKindConfig(readFileSync(src, 'utf8'), name, modelsDir));
  } catch (error) {
    process.stderr.write(`kind-config.js: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
