// Tests are TypeScript under ESM, compiled on the fly by SWC (type checking is `npm run lint`'s job).
// Workspace packages resolve to their sources so a test never runs a stale build.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The real-node end-to-end run has its own command and config (npm run e2e:node, test/node).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/node/'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
        module: { type: 'es6' },
        sourceMaps: 'inline',
      },
    ],
  },
  moduleNameMapper: {
    '^@clinicalsuite/kit$': '<rootDir>/services/kit/src/index.ts',
    '^@clinicalsuite/kit/(.*)$': '<rootDir>/services/kit/src/$1/index.ts',
    '^@clinicalsuite/task-agent/(.*)$': '<rootDir>/services/task-agent/src/$1/index.ts',
    '^@clinicalsuite/reasoning/(.*)$': '<rootDir>/services/reasoning/src/$1/index.ts',
    '^@clinicalsuite/operator/api$': '<rootDir>/operator/src/api/v1alpha1/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testTimeout: 30_000,
  // The test control plane is shared by the files under test/cluster; stopped once, at the end.
  globalSetup: '<rootDir>/test/cluster/global-setup.js',
  globalTeardown: '<rootDir>/test/cluster/global-teardown.js',
  // Every test runs its own servers on ephemeral loopback ports; two workers suit a 2-core machine.
  maxWorkers: 2,
  // The whole suite on its real models first, the files on the test control plane last.
  testSequencer: '<rootDir>/test/sequencer.js',
};
