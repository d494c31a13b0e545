// Jest for the real-node end-to-end run (`npm run e2e:node`): test/node's steps in order, one
// cluster with a real node for all of them, and a table of what passed and how long each took.
// The default run leaves test/node out (jest.config.js's testPathIgnorePatterns).
import base from '../../jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  rootDir: '../..',
  roots: ['<rootDir>/test/node'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: undefined,
  globalTeardown: undefined,
  testSequencer: undefined,
  maxWorkers: 1,
  testTimeout: 10 * 60_000,
  reporters: ['default', '<rootDir>/test/node/table-reporter.js'],
};
