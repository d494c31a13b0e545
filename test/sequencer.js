// The order jest hands test files to its two workers (jest.config.js). The whole suite on its real
// models (test/operator/local/default-suite.test.ts) keeps both cores busy with the text LLM for
// minutes: it starts first, so that the files on the shared test control plane, whose timeouts
// assume cores to spare, come last and run after it. Jest's own order (failed first, then slowest
// first, from its cache) holds within each group.
import TestSequencer from '@jest/test-sequencer';

// CommonJS: its class is the default export's `default`.
const Sequencer = TestSequencer.default ?? TestSequencer;

const FIRST = [/test\/operator\/local\/default-suite\.test\.ts$/];
const LAST = [/test\/cluster\//, /test\/helm\//, /test\/observability\/prometheus\.test\.ts$/];

const group = (path) => (FIRST.some((r) => r.test(path)) ? 0 : LAST.some((r) => r.test(path)) ? 2 : 1);

export default class SuiteFirstSequencer extends Sequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    return [...sorted].sort((a, b) => group(a.path) - group(b.path));
  }
}
