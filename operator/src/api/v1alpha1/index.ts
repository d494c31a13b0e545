export * from './constants.js';
export * from './components.js';
export * from './dependencies.js';
export * from './spec.js';
export * from './status.js';
export * from './suite.js';
export * from './parse.js';
