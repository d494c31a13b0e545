// The agent's sub-services, benchmarked one after another by hand (never as a timed test):
//
//   npm run bench:subservices                 # stt, ocr, tts, codesearch, patient-sim
//   npm run bench:subservices -- ocr tts      # some of them
//
// Each script starts the built service on a free port and measures it over a real socket
// (per-request latency p50/p95, throughput; OCR character accuracy, STT word error rate, TTS
// real-time factor, code search recall@10 lexical versus hybrid); see the comment at its top.
import { spawnSync } from 'node:child_process';

const ALL = ['stt', 'ocr', 'tts', 'codesearch', 'patient-sim'];
const chosen = process.argv.slice(2);
const unknown = chosen.filter((name) => !ALL.includes(name));
if (unknown.length > 0) {
  console.error(`unknown sub-service ${unknown.join(', ')}; choose from ${ALL.join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const name of chosen.length > 0 ? chosen : ALL) {
  console.log(`\n=== ${name}`);
  const script = new URL(`./${name}.js`, import.meta.url).pathname;
  const { status } = spawnSync(process.execPath, [script], { stdio: 'inherit' });
  if (status !== 0) {
    console.error(`=== ${name}: exit ${status}`);
    failed++;
  }
}
process.exit(failed === 0 ? 0 : 1);
