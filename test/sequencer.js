// The order jest hands test files to its two workers (jest.config.js). The whole suite on its real
// models (test/operator/local/default-suite.test.ts) keeps both cores busy with the text LLM for
// minutes: it starts first, so that the files on the shared test control plane, whose timeouts
// assume cores to spare, come last and run after it. The OpenAPI fuzz of every service
// (test/fuzz/schemathesis.test.ts) starts the suite too: it comes after all the other files but
// those on the control plane, so that it does not start beside the default suite, whose services
// must be ready within the README's time. Jest's own order (failed first, then slowest first, from
// its cache) holds within each group.
import TestSequencer from '@jest/test-sequencer';

// CommonJS: its class is the default export's `default`.
const Sequencer = TestSequencer.default ?? TestSequencer;

const FIRST = [/test\/operator\/local\/default-suite\.test\.ts$/];
const LATE = [/test\/fuzz\/schemathesis\.test\.ts$/];
const LAST = [/test\/cluster\//, /test\/helm\//, /test\/observability\/prometheus\.test\.ts$/];

/** 0 first, 1 the rest, 2 late, 3 last. */
function group(path) {
  if (FIRST.some((r) => r.test(path))) return 0;
  if (LATE.some((r) => r.test(path))) return 2;
  if (LAST.some((r) => r.test(path))) return 3;
  return 1;
}

export default class SuiteFirstSequencer extends Sequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    return [...sorted].sort((a, b) => group(a.path) - group(b.path));
  }
}
