// `npm run dashboards:render -- --out DIR`: PNG renders of every dashboard in dashboards/ with real
// data. Grafana cannot run here (no Grafana in Debian's archive or on npm), so this runs the
// real-Prometheus test (test/observability/prometheus.test.ts: the suite on the local runner, the
// operator on the test control plane, a real Prometheus, a short load) with RENDER_DASHBOARDS=DIR,
// whose last step draws each dashboard's panels from Prometheus query_range results over the load
// window (test/observability/render/render.ts) into DIR/<dashboard>.png.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const args = process.argv.slice(2).filter((a) => a !== '--');
const at = args.indexOf('--out');
if (args.includes('-h') || args.includes('--help') || at < 0 || args[at + 1] === undefined) {
  process.stderr.write('usage: npm run dashboards:render -- --out DIR\n');
  process.exit(args.includes('-h') || args.includes('--help') ? 0 : 2);
}
const out = resolve(args[at + 1]);
const result = spawnSync(
  process.execPath,
  ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', 'test/observability/prometheus.test.ts'],
  { cwd: REPO, stdio: 'inherit', env: { ...process.env, RENDER_DASHBOARDS: out } },
);
process.exit(result.status ?? 1);
