// Jest for the end-to-end run on an external cluster (test/e2e/run.sh sets the
// CLINICALSUITE_E2E_* variables; test/cluster/target.ts reads them). The default config's
// transform and module mapping, but only the tests that make sense on a cluster whose pods really
// run: the operator's integration tests. The test control plane's own tests (kwok nodes, its
// pinned version) and the chart's install on it stay with the default run; no globalSetup or
// globalTeardown, since this run starts and stops no local control plane.
import base from '../../jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  rootDir: '../..',
  roots: ['<rootDir>/test/cluster'],
  testMatch: ['**/operator.test.ts'],
  globalSetup: undefined,
  globalTeardown: undefined,
  // One file, one cluster: its tests run in order, as on the test control plane.
  maxWorkers: 1,
  testTimeout: 120_000,
};
